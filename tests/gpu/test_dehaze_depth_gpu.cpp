// DCP at 10, 12 and 16 bits on the GPU against the CPU backend (SPEC 7): the float colour
// conversion and the fused dark channel bit-identical from frames at depth (P010/P016 nv12
// included), whole frames within one code at depth on every layout and odd sizes with the same
// atmospheric light, the light sequence over frames through process() and through two lanes
// (pinned host frames, enqueue/wait), the temporal-state estimate() at depth, and frames of
// mismatched depths refused.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu/gpu_color_check.hpp"
#include "gpu/gpu_test_util.hpp"
#include "kernels/color_convert.hpp"
#include "kernels/cuda/cuda_memory.hpp"
#include "kernels/cuda/cuda_processor.hpp"
#include "kernels/cuda/dehaze_cuda.hpp"
#include "kernels/cuda/device_frame.hpp"
#include "kernels/dehaze_ops.hpp"
#include "kernels/processor.hpp"
#include "support/sample_access.hpp"

namespace hazefree {
namespace {

using gpu_test::dcp_config;

using gpu_test::fresh_seed;

constexpr int kDepths[] = {10, 12, 16};

std::string describe(PixelFormat f, int depth, int w, int h) {
  return format_name(f, depth) + " " + std::to_string(w) + "x" + std::to_string(h);
}

using samples::row_samples;
using samples::sample;
using samples::set_sample;

Image make_image(PixelFormat f, int w, int h, int depth) { return Image(f, w, h, 64, depth); }

// Random codes over the whole range of the depth.
void fill_random(const ImageView& v, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> code(0, max_code(v.depth));
  for (int p = 0; p < v.plane_count; ++p)
    for (int y = 0; y < v.planes[p].height; ++y)
      for (int i = 0; i < row_samples(v, p); ++i) set_sample(v, p, i, y, code(rng));
}

// Smooth haze-like content (gradients, a bright region, mild noise) at the depth's scale, with
// values between the 8-bit codes (the point of the extra bits).
void fill_smooth(const ImageView& v, std::uint32_t seed) {
  std::mt19937 rng(seed);
  const double phase = (seed % 1000) * 0.001, scale = std::ldexp(1.0, v.depth - 8);
  for (int p = 0; p < v.plane_count; ++p) {
    const int per = row_samples(v, p) / v.planes[p].width;  // samples per position
    for (int y = 0; y < v.planes[p].height; ++y)
      for (int i = 0; i < row_samples(v, p); ++i) {
        const int x = i / per;
        double value = 90.0 + 60.0 * std::sin(0.02 * x + phase + 0.5 * (i % per)) *
                                  std::cos(0.015 * y + 0.3 * p);
        const double dx = x - v.planes[p].width * 0.7, dy = y - v.planes[p].height * 0.2;
        if (dx * dx + dy * dy < 0.02 * v.planes[p].width * v.planes[p].width) value += 80.0;
        value = value * scale + static_cast<int>(rng() % 9) - 4;
        set_sample(v, p, i, y, std::clamp(static_cast<int>(value), 0, max_code(v.depth)));
      }
  }
}

// Poisons every byte of a frame (unwritten output shows).
void poison(const ImageView& v) {
  for (int p = 0; p < v.plane_count; ++p)
    for (int y = 0; y < v.planes[p].height; ++y)
      std::memset(
          v.planes[p].data + static_cast<std::ptrdiff_t>(y) * v.planes[p].stride, 0xA5,
          static_cast<std::size_t>(v.planes[p].width) * bytes_per_sample(v.format, p, v.depth));
}

struct CodeDiff {
  long long samples = 0, differing = 0, over_1 = 0;
  int max_abs = 0;
  double sum_abs = 0.0;
  double mean() const { return samples ? sum_abs / samples : 0.0; }
  double share_over_1() const { return samples ? static_cast<double>(over_1) / samples : 0.0; }
  std::string text() const {
    return "max " + std::to_string(max_abs) + ", mean " + std::to_string(mean()) +
           ", >1: " + std::to_string(over_1) + "/" + std::to_string(samples) + ", differing " +
           std::to_string(differing);
  }
};

// Code differences of two frames of one format and depth; nv12's stored low bits must be zero
// in both (P010/P016 keep the value in the high bits).
CodeDiff compare(const ImageView& a, const ImageView& b) {
  CodeDiff d;
  for (int p = 0; p < a.plane_count; ++p)
    for (int y = 0; y < a.planes[p].height; ++y)
      for (int i = 0; i < row_samples(a, p); ++i) {
        const int e = std::abs(sample(a, p, i, y) - sample(b, p, i, y));
        ++d.samples;
        d.sum_abs += e;
        d.differing += e != 0;
        d.over_1 += e > 1;
        d.max_abs = std::max(d.max_abs, e);
      }
  return d;
}

long long low_bits_set(const ImageView& v) {
  const int shift = sample_shift(v);
  if (shift == 0) return 0;
  long long n = 0;
  for (int p = 0; p < v.plane_count; ++p)
    for (int y = 0; y < v.planes[p].height; ++y)
      for (int i = 0; i < row_samples(v, p); ++i) {
        std::uint16_t raw;
        std::memcpy(&raw,
                    v.planes[p].data + static_cast<std::ptrdiff_t>(y) * v.planes[p].stride + 2 * i,
                    2);
        n += (raw & ((1 << shift) - 1)) != 0;
      }
  return n;
}

// "Within one code at depth": as at 8 bits, where the float guided filter's last-bit
// differences between the backends, amplified by the recovery's 1 / max(t, t0), may move a rare
// sample further, the bound is on the share: at most 0.1% of the samples more than one code
// apart, and a mean difference below half a code.
void check_within_one_code(const CodeDiff& d) {
  CHECK(d.share_over_1() <= 0.001);
  CHECK(d.mean() <= 0.5);
}

}  // namespace

TEST_CASE("frame to float RGB at depth: identical to the CPU on every layout, matrix and range") {
  const gpu_test::Size sizes[] = {{1, 1}, {3, 2}, {17, 9}, {321, 241}};
  for (const int depth : kDepths)
    for (const PixelFormat f : gpu_test::all_formats())
      for (const gpu_test::Size s : sizes)
        for (const ColorMatrix m : {ColorMatrix::bt601, ColorMatrix::bt709, ColorMatrix::bt2020})
          for (const ColorRange r : {ColorRange::limited, ColorRange::full}) {
            if (!is_yuv(f) && (m != ColorMatrix::bt601 || r != ColorRange::limited)) continue;
            const std::uint32_t seed = fresh_seed();
            Image in = make_image(f, s.w, s.h, depth);
            fill_random(in.view(), seed);
            in.view().matrix = m;
            in.view().range = r;
            const long long differing = gpu_test::float_rgb_differences(in.view());
            INFO(describe(f, depth, s.w, s.h), " matrix ", static_cast<int>(m), " range ",
                 static_cast<int>(r), " seed ", seed);
            CHECK(differing == 0);
          }
}

TEST_CASE("fused dark channel at depth: grey, dark channel and block maxima as the CPU's") {
  for (const int depth : kDepths)
    for (const PixelFormat f : gpu_test::all_formats())
      for (const gpu_test::Size s :
           {gpu_test::Size{17, 9}, gpu_test::Size{65, 33}, gpu_test::Size{321, 241}}) {
        const std::uint32_t seed = fresh_seed();
        Image in = make_image(f, s.w, s.h, depth);
        if (seed % 2)
          fill_random(in.view(), seed);
        else
          fill_smooth(in.view(), seed);
        const int stride = cuda::float_stride(s.w);
        const std::size_t plane = static_cast<std::size_t>(stride) * s.h;
        std::vector<float> rgb(plane * 3), grey(plane), dark(plane);
        const RgbPlanesF planes{rgb.data(), rgb.data() + plane, rgb.data() + 2 * plane, stride};
        cpu::frame_to_rgb_f32(in.view(), planes, 1);
        const PlaneF cpu_grey{grey.data(), s.w, s.h, stride},
            cpu_dark{dark.data(), s.w, s.h, stride};
        cpu::grey_and_channel_min(planes, cpu_grey, cpu_dark, 1);
        cpu::MinFilter min_filter;
        min_filter.apply(cpu_dark, cpu_dark, 7, 1);
        cpu::AtmosphereEstimator estimator;
        estimator.estimate(cpu_dark, cpu_grey, planes, 0.01f, 1);

        cuda::DeviceFrame d_frame;
        d_frame.shape(f, s.w, s.h, depth);
        cuda::copy_frame_async(in.view(), d_frame.view(), cudaMemcpyHostToDevice, nullptr);
        cuda::DeviceBuffer<float> d_planes(plane * 2);
        const cuda::DevicePlaneF g_grey{d_planes.get(), s.w, s.h, stride};
        const cuda::DevicePlaneF g_dark{d_planes.get() + plane, s.w, s.h, stride};
        const std::vector<cpu::BlockMax>& blocks = estimator.ranked_blocks();
        cuda::DeviceBuffer<float4> d_blocks(blocks.size());
        cuda::launch_grey_and_dark_channel(d_frame.view(), 7, g_grey, g_dark, d_blocks.get(),
                                           nullptr);
        std::vector<float> got(plane * 2);
        HAZEFREE_CUDA_CHECK(
            cudaMemcpy(got.data(), d_planes.get(), d_planes.bytes(), cudaMemcpyDeviceToHost));
        long long differing = 0;
        for (int y = 0; y < s.h; ++y)
          for (int x = 0; x < s.w; ++x) {
            const std::size_t i = static_cast<std::size_t>(y) * stride + x;
            differing += std::memcmp(&got[i], &grey[i], sizeof(float)) != 0;
            differing += std::memcmp(&got[plane + i], &dark[i], sizeof(float)) != 0;
          }
        std::vector<float4> got_blocks(blocks.size());
        HAZEFREE_CUDA_CHECK(cudaMemcpy(got_blocks.data(), d_blocks.get(), d_blocks.bytes(),
                                       cudaMemcpyDeviceToHost));
        long long differing_blocks = 0;
        for (const cpu::BlockMax& e : blocks) {
          const float4 b = got_blocks[static_cast<std::size_t>(e.index)];
          int bx, by;
          std::memcpy(&bx, &b.z, sizeof(int));
          std::memcpy(&by, &b.w, sizeof(int));
          differing_blocks += b.x != e.dark || b.y != e.grey || bx != e.x || by != e.y;
        }
        INFO(describe(f, depth, s.w, s.h), " seed ", seed);
        CHECK(differing == 0);
        CHECK(differing_blocks == 0);
      }
}

TEST_CASE("DCP frames at depth: within one code of the CPU, every layout and odd size, same A") {
  const gpu_test::Size sizes[] = {{1, 1}, {2, 2}, {3, 2}, {17, 9}, {321, 241}, {1920, 1080}};
  double worst_mean = 0.0, worst_share = 0.0;
  int worst_max = 0, frames = 0, identical = 0;
  for (const int depth : kDepths)
    for (const PixelFormat f : gpu_test::all_formats())
      for (const gpu_test::Size s : sizes)
        for (const int subsample : {1, 4}) {
          if (s.w * s.h > 1'000'000 && f != PixelFormat::yuv420p && f != PixelFormat::nv12)
            continue;
          if (gpu_test::skip_large(s.w, s.h)) continue;
          for (const bool smooth : {true, false}) {
            ProcessingConfig c = dcp_config();
            c.dcp.gf_subsample = subsample;
            const std::uint32_t seed = fresh_seed();
            Image in = make_image(f, s.w, s.h, depth);
            if (smooth)
              fill_smooth(in.view(), seed);
            else
              fill_random(in.view(), seed);
            in.view().matrix = default_matrix_for_height(s.h);
            Image a = make_image(f, s.w, s.h, depth), b = make_image(f, s.w, s.h, depth);
            poison(b.view());
            auto cpu = make_cpu_processor(c);
            auto gpu = make_cuda_processor(c);
            cpu->process(in.view(), a.view());
            gpu->process(in.view(), b.view());
            const CodeDiff d = compare(a.view(), b.view());
            INFO(describe(f, depth, s.w, s.h), " subsample ", subsample, " seed ", seed,
                 smooth ? " smooth " : " random ", d.text());
            check_within_one_code(d);
            CHECK(low_bits_set(b.view()) == 0);
            CHECK(cpu->atmospheric_light() == gpu->atmospheric_light());
            worst_mean = std::max(worst_mean, d.mean());
            worst_share = std::max(worst_share, d.share_over_1());
            worst_max = std::max(worst_max, d.max_abs);
            ++frames;
            identical += d.differing == 0;
          }
        }
  MESSAGE("DCP at depth vs CPU over ", frames, " frames: ", identical,
          " identical; worst mean |diff| ", worst_mean, " codes, worst max ", worst_max,
          ", worst share > 1 code ", worst_share);
}

TEST_CASE("DCP at depth: the atmospheric light sequence equals the CPU's, cuts and reset") {
  for (const int depth : {10, 16}) {
    const PixelFormat f = depth == 10 ? PixelFormat::nv12 : PixelFormat::yuv420p;
    auto cpu = make_cpu_processor(dcp_config());
    auto gpu = make_cuda_processor(dcp_config());
    const int w = 640, h = 360;
    for (int frame = 0; frame < 10; ++frame) {
      if (frame == 7) {
        cpu->reset();
        gpu->reset();
      }
      Image in = make_image(f, w, h, depth);
      // Frames drift slowly; frame 4 is a cut (random content).
      if (frame == 4)
        fill_random(in.view(), fresh_seed());
      else
        fill_smooth(in.view(), 1000 + frame);
      Image a = make_image(f, w, h, depth), b = make_image(f, w, h, depth);
      cpu->process(in.view(), a.view());
      gpu->process(in.view(), b.view());
      const auto ac = cpu->atmospheric_light(), ag = gpu->atmospheric_light();
      INFO(format_name(f, depth), " frame ", frame, " cpu ", ac[0], ",", ac[1], ",", ac[2], " gpu ",
           ag[0], ",", ag[1], ",", ag[2]);
      CHECK(ac == ag);
      check_within_one_code(compare(a.view(), b.view()));
    }
  }
}

TEST_CASE("DCP at depth through two lanes: the frames and A sequence of one-by-one processing") {
  const int w = 480, h = 270, frames = 7;
  for (const int depth : kDepths)
    for (const PixelFormat f : {PixelFormat::yuv420p, PixelFormat::nv12, PixelFormat::rgb24}) {
      ProcessingConfig c = dcp_config();
      const std::size_t bytes = frame_bytes(f, w, h, 64, depth);
      cuda::PinnedBuffer<std::uint8_t> pin_in(bytes * frames), pin_out(bytes * frames);
      std::vector<ImageView> ins, outs;
      for (int i = 0; i < frames; ++i) {
        ins.push_back(make_view(f, w, h, pin_in.get() + bytes * i, 64, depth));
        outs.push_back(make_view(f, w, h, pin_out.get() + bytes * i, 64, depth));
        fill_smooth(ins.back(), 300 + 17 * i);
        poison(outs.back());
      }
      cuda::CudaProcessor lanes(c, 2);
      for (int i = 0; i < frames; ++i) {
        if (i >= 2) lanes.wait(i % 2);
        lanes.enqueue(i % 2, ins[i], outs[i]);
      }
      lanes.wait(0);
      lanes.wait(1);
      auto single = make_cuda_processor(c);
      auto cpu = make_cpu_processor(c);
      for (int i = 0; i < frames; ++i) {
        Image expected = make_image(f, w, h, depth), on_cpu = make_image(f, w, h, depth);
        single->process(ins[i], expected.view());
        cpu->process(ins[i], on_cpu.view());
        INFO(format_name(f, depth), " frame ", i);
        CHECK(compare(expected.view(), outs[i]).differing == 0);
        check_within_one_code(compare(on_cpu.view(), outs[i]));
      }
      CHECK(single->atmospheric_light() == lanes.atmospheric_light());
      CHECK(cpu->atmospheric_light() == lanes.atmospheric_light());
    }
}

TEST_CASE("DCP at depth: the CUDA temporal-state estimate equals the CPU's and leaves the state") {
  for (const int depth : kDepths)
    for (const PixelFormat f :
         {PixelFormat::yuv420p, PixelFormat::nv12, PixelFormat::gray8, PixelFormat::rgb24}) {
      auto cpu = make_cpu_processor(dcp_config());
      auto gpu = make_cuda_processor(dcp_config());
      const int w = 333, h = 187;
      // A first frame gives both a state; the estimates of later frames must not move it.
      Image first = make_image(f, w, h, depth), out = make_image(f, w, h, depth);
      fill_smooth(first.view(), 77);
      cpu->process(first.view(), out.view());
      gpu->process(first.view(), out.view());
      const TemporalState before = gpu->temporal_state();
      for (int i = 0; i < 3; ++i) {
        Image in = make_image(f, w, h, depth);
        fill_smooth(in.view(), 500 + 31 * i);
        const FrameEstimate e_cpu = cpu->estimate(in.view());
        const FrameEstimate e_gpu = gpu->estimate(in.view());
        INFO(format_name(f, depth), " frame ", i);
        CHECK(e_gpu.light == e_cpu.light);
      }
      const TemporalState after = gpu->temporal_state();
      CHECK(after.has_light == before.has_light);
      CHECK(after.light == before.light);
      CHECK(gpu->atmospheric_light() == cpu->atmospheric_light());
    }
}

TEST_CASE("DCP at depth: frames of different depths are refused on the GPU") {
  auto gpu = make_cuda_processor(dcp_config());
  Image in = make_image(PixelFormat::yuv420p, 16, 8, 10),
        out8 = make_image(PixelFormat::yuv420p, 16, 8, 8);
  CHECK_THROWS_AS(gpu->process(in.view(), out8.view()), std::invalid_argument);
  cuda::CudaProcessor lanes(dcp_config(), 1);
  cuda::DeviceFrame d_in, d_out;
  d_in.shape(PixelFormat::yuv420p, 16, 8, 10);
  d_out.shape(PixelFormat::yuv420p, 16, 8, 12);
  CHECK_THROWS_AS(lanes.process_device(d_in.view(), d_out.view(), nullptr), std::invalid_argument);
}

}  // namespace hazefree
