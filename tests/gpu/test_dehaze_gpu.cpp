// The DCP chain on the GPU against the CPU backend: the min filter exact on the same float input,
// the guided filter to float rounding, the atmospheric light sequence identical, and whole
// frames within 1 level mean absolute difference and 2 levels on 99.9% of the samples.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "gpu/gpu_test_util.hpp"
#include "kernels/color_convert.hpp"
#include "kernels/cuda/cuda_memory.hpp"
#include "kernels/cuda/cuda_processor.hpp"
#include "kernels/cuda/dehaze_cuda.hpp"
#include "kernels/cuda/device_frame.hpp"
#include "kernels/dehaze_ops.hpp"
#include "kernels/processor.hpp"

namespace hazefree {
namespace {

using gpu_test::dcp_config;

using gpu_test::fresh_seed;

// A float plane on both sides: host (CPU operators) and device (CUDA operators).
struct TwinPlane {
  int w, h, stride;
  std::vector<float> host;
  cuda::DeviceBuffer<float> device;
  TwinPlane(int width, int height)
      : w(width), h(height), stride(cuda::float_stride(width)),
        host(static_cast<std::size_t>(stride) * height, 0.f), device(host.size()) {}
  PlaneF cpu() { return {host.data(), w, h, stride}; }
  cuda::DevicePlaneF gpu() { return {device.get(), w, h, stride}; }
  void upload() {
    HAZEFREE_CUDA_CHECK(cudaMemcpy(device.get(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  std::vector<float> download() {
    std::vector<float> v(host.size());
    HAZEFREE_CUDA_CHECK(cudaMemcpy(v.data(), device.get(), v.size() * sizeof(float), cudaMemcpyDeviceToHost));
    return v;
  }
};

void fill(TwinPlane& p, std::uint32_t seed, int levels, bool smooth) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (int y = 0; y < p.h; ++y)
    for (int x = 0; x < p.w; ++x) {
      float v = smooth ? 0.5f + 0.3f * std::sin(0.03f * x) * std::cos(0.02f * y) + 0.05f * u(rng) : u(rng);
      if (levels > 0) v = static_cast<float>(static_cast<int>(v * levels)) / levels;
      p.host[static_cast<std::size_t>(y) * p.stride + x] = v;
    }
}

int float_bits_as_int(float v) {
  int i;
  std::memcpy(&i, &v, sizeof(i));
  return i;
}

}  // namespace

TEST_CASE("min filter: identical to the CPU's on the same float input") {
  const gpu_test::Size sizes[] = {{1, 1}, {2, 2}, {3, 2}, {2, 3}, {17, 9}, {33, 1}, {1, 40},
                                  {321, 241}, {1920, 1080}};
  cuda::MinFilterCuda gpu;
  cpu::MinFilter cpu_filter;
  for (const gpu_test::Size s : sizes)
    if (!gpu_test::skip_large(s.w, s.h))
    for (const int radius : {0, 1, 2, 3, 7, 15, 50, 400, 5000})
      for (const int levels : {0, 5}) {
        const std::uint32_t seed = fresh_seed();
        TwinPlane src(s.w, s.h), expected(s.w, s.h), actual(s.w, s.h);
        fill(src, seed, levels, false);
        src.upload();
        cpu_filter.apply(src.cpu(), expected.cpu(), radius, 0);
        gpu.apply(src.gpu(), actual.gpu(), radius, nullptr);
        const std::vector<float> got = actual.download();
        long long differing = 0;
        for (int y = 0; y < s.h; ++y)
          for (int x = 0; x < s.w; ++x) {
            const std::size_t i = static_cast<std::size_t>(y) * src.stride + x;
            differing += got[i] != expected.host[i];
          }
        INFO(s.w, "x", s.h, " radius ", radius, " levels ", levels, " seed ", seed);
        CHECK(differing == 0);
      }
}

TEST_CASE("fused dark channel and raw transmission: identical to the CPU's from the frame") {
  std::vector<gpu_test::Size> sizes = gpu_test::small_sizes();
  sizes.push_back({65, 33});
  sizes.push_back({1920, 1080});
  const std::array<float, 3> a = {0.83f, 0.91f, 0.77f};
  cuda::DeviceBuffer<cuda::AtmosphereState> d_state(1);
  // Strength 1: the configured omega (no auto strength).
  const cuda::AtmosphereState state{{a[0], a[1], a[2]}, {a[0], a[1], a[2]}, 1, 0, 0.f, 0.f, 1.f};
  HAZEFREE_CUDA_CHECK(cudaMemcpy(d_state.get(), &state, sizeof(state), cudaMemcpyHostToDevice));
  cpu::MinFilter cpu_filter;
  for (const PixelFormat f : gpu_test::all_formats())
    for (const gpu_test::Size s : sizes)
      for (const int radius : {0, 1, 2, 7, 15, cuda::kPatchTileMaxRadius}) {
        if (gpu_test::skip_large(s.w, s.h)) continue;
        if (s.w * s.h > 100'000 && f != PixelFormat::yuv420p && radius != 7) continue;
        const std::uint32_t seed = fresh_seed();
        Image in = gpu_test::make_image(f, s.w, s.h);
        if (seed % 2) gpu_test::fill_random(in.view(), seed);
        else gpu_test::fill_smooth(in.view(), seed);
        TwinPlane r(s.w, s.h), g(s.w, s.h), b(s.w, s.h);
        cpu::frame_to_rgb_f32(in.view(), RgbPlanesF{r.host.data(), g.host.data(), b.host.data(), r.stride}, 1);
        TwinPlane grey(s.w, s.h), dark(s.w, s.h), trans(s.w, s.h);
        cpu::grey_and_channel_min(RgbPlanesF{r.host.data(), g.host.data(), b.host.data(), r.stride},
                                  grey.cpu(), dark.cpu(), 1);
        cpu_filter.apply(dark.cpu(), dark.cpu(), radius, 1);
        cpu::AtmosphereEstimator estimator;
        estimator.estimate(dark.cpu(), grey.cpu(),
                           RgbPlanesF{r.host.data(), g.host.data(), b.host.data(), r.stride}, 0.01f, 1);
        const std::vector<cpu::BlockMax>& blocks = estimator.ranked_blocks();
        cpu::normalised_channel_min(RgbPlanesF{r.host.data(), g.host.data(), b.host.data(), r.stride},
                                    a, trans.cpu(), 1);
        cpu_filter.apply(trans.cpu(), trans.cpu(), radius, 1);
        cpu::raw_transmission(trans.cpu(), 0.95f, 1);

        cuda::DeviceFrame d_frame;
        d_frame.shape(f, s.w, s.h);
        cuda::copy_frame_async(in.view(), d_frame.view(), cudaMemcpyHostToDevice, nullptr);
        cuda::DeviceBuffer<float4> d_blocks(blocks.size());
        cuda::launch_grey_and_dark_channel(d_frame.view(), radius, grey.gpu(), dark.gpu(),
                                           d_blocks.get(), nullptr);
        cuda::launch_raw_transmission(d_frame.view(), d_state.get(), radius, 0.95f, trans.gpu(), nullptr);
        const std::vector<float> got_grey = grey.download(), got_dark = dark.download(),
                                 got_trans = trans.download();
        long long differing[3] = {0, 0, 0};
        for (int y = 0; y < s.h; ++y)
          for (int x = 0; x < s.w; ++x) {
            const std::size_t i = static_cast<std::size_t>(y) * grey.stride + x;
            differing[0] += std::memcmp(&got_grey[i], &grey.host[i], sizeof(float)) != 0;
            differing[1] += std::memcmp(&got_dark[i], &dark.host[i], sizeof(float)) != 0;
            differing[2] += std::memcmp(&got_trans[i], &trans.host[i], sizeof(float)) != 0;
          }
        // Step 3's block maxima: the same maximum, grey and position in every block.
        std::vector<float4> got_blocks(blocks.size());
        HAZEFREE_CUDA_CHECK(cudaMemcpy(got_blocks.data(), d_blocks.get(), d_blocks.bytes(), cudaMemcpyDeviceToHost));
        long long differing_blocks = 0;
        for (const cpu::BlockMax& e : blocks) {
          const float4 gb = got_blocks[static_cast<std::size_t>(e.index)];
          differing_blocks += gb.x != e.dark || gb.y != e.grey || float_bits_as_int(gb.z) != e.x ||
                              float_bits_as_int(gb.w) != e.y;
        }
        INFO(gpu_test::describe(f, s.w, s.h), " radius ", radius, " seed ", seed);
        CHECK(differing[0] == 0);
        CHECK(differing[1] == 0);
        CHECK(differing[2] == 0);
        CHECK(differing_blocks == 0);
      }
  cuda::DeviceFrame d_frame;
  d_frame.shape(PixelFormat::yuv420p, 8, 8);
  TwinPlane p(8, 8);
  CHECK_THROWS_AS(cuda::launch_grey_and_dark_channel(d_frame.view(), cuda::kPatchTileMaxRadius + 1,
                                                     p.gpu(), p.gpu(), nullptr, nullptr),
                  std::invalid_argument);
}

TEST_CASE("guided filter: the CPU's result to float rounding, exact and subsampled") {
  const gpu_test::Size sizes[] = {{1, 1}, {3, 2}, {17, 9}, {321, 241}, {1920, 1080}};
  cuda::GuidedFilterCuda gpu;
  cpu::GuidedFilter cpu_filter;
  double overall = 0.0;
  long long samples = 0, overall_differing = 0;
  for (const gpu_test::Size s : sizes)
    if (!gpu_test::skip_large(s.w, s.h))
    for (const int radius : {1, 4, 32, 100, 300})
      for (const int subsample : {1, 2, 4}) {
        const std::uint32_t seed = fresh_seed();
        TwinPlane guide(s.w, s.h), input(s.w, s.h), expected(s.w, s.h), actual(s.w, s.h);
        fill(guide, seed, 0, true);
        fill(input, seed + 1, 0, false);
        guide.upload();
        input.upload();
        cpu_filter.apply(guide.cpu(), input.cpu(), expected.cpu(), radius, 1e-3f, subsample, 0);
        gpu.apply(guide.gpu(), input.gpu(), actual.gpu(), radius, 1e-3f, subsample, nullptr);
        const std::vector<float> got = actual.download();
        double worst = 0.0;
        long long differing = 0;
        for (int y = 0; y < s.h; ++y)
          for (int x = 0; x < s.w; ++x) {
            const std::size_t i = static_cast<std::size_t>(y) * guide.stride + x;
            worst = std::max(worst, static_cast<double>(std::fabs(got[i] - expected.host[i])));
            differing += got[i] != expected.host[i];
          }
        INFO(s.w, "x", s.h, " radius ", radius, " subsample ", subsample, " seed ", seed,
             " worst ", worst, " differing ", differing);
        CHECK(worst <= 1e-4);
        overall = std::max(overall, worst);
        overall_differing += differing;
        samples += static_cast<long long>(s.w) * s.h;
      }
  MESSAGE("guided filter vs CPU: worst |diff| ", overall, ", ", overall_differing, " of ", samples,
          " samples not bit-identical");
}

TEST_CASE("DCP frames: within 1 level mean and 2 levels on 99.9%, every format and size") {
  double worst_mean = 0.0, worst_over_2 = 0.0;
  int worst_max = 0, frames = 0, identical = 0;
  for (const PixelFormat f : gpu_test::all_formats())
    for (const gpu_test::Size s : gpu_test::all_sizes())
      for (const int subsample : {1, 4}) {
        if (s.w * s.h > 2'000'000 && f != PixelFormat::yuv420p) continue;
        if (gpu_test::skip_large(s.w, s.h)) continue;
        for (const bool smooth : {true, false}) {
          ProcessingConfig c = dcp_config();
          c.dcp.gf_subsample = subsample;
          const std::uint32_t seed = fresh_seed();
          Image in = gpu_test::make_image(f, s.w, s.h);
          if (smooth) gpu_test::fill_smooth(in.view(), seed);
          else gpu_test::fill_random(in.view(), seed);
          Image a = gpu_test::make_image(f, s.w, s.h), b = gpu_test::make_image(f, s.w, s.h);
          gpu_test::poison(b.view());
          auto cpu = make_cpu_processor(c);
          auto gpu = make_cuda_processor(c);
          cpu->process(in.view(), a.view());
          gpu->process(in.view(), b.view());
          const gpu_test::FrameDiff d = gpu_test::compare(a.view(), b.view());
          INFO(gpu_test::describe(f, s.w, s.h), " subsample ", subsample, " seed ", seed,
               smooth ? " smooth " : " random ", d.text());
          CHECK(d.mean_abs() <= 1.0);
          CHECK(d.fraction_over_2() <= 0.001);
          worst_mean = std::max(worst_mean, d.mean_abs());
          worst_over_2 = std::max(worst_over_2, d.fraction_over_2());
          worst_max = std::max(worst_max, d.max_abs);
          ++frames;
          identical += d.differing == 0;
          const auto ac = cpu->atmospheric_light(), ag = gpu->atmospheric_light();
          CHECK(ac[0] == ag[0]);
          CHECK(ac[1] == ag[1]);
          CHECK(ac[2] == ag[2]);
        }
      }
  MESSAGE("DCP vs CPU over ", frames, " frames: ", identical, " identical; worst mean |diff| ",
          worst_mean, ", worst max ", worst_max, ", worst share > 2 levels ", worst_over_2);
}

TEST_CASE("DCP parameters: radii, windows larger than the image, K off, brightness") {
  struct Case {
    int patch, gf_radius, subsample;
    float k, brightness, omega;
  };
  const Case cases[] = {{0, 1, 1, 80.f / 255, 0.2f, 0.95f}, {1, 2, 1, 0.f, 0.f, 1.f},
                        {15, 60, 4, 0.5f, 1.f, 0.5f},       {300, 500, 1, 80.f / 255, 0.2f, 0.95f},
                        {7, 32, 3, 80.f / 255, 0.2f, 0.95f}};
  for (const Case& k : cases)
    for (const gpu_test::Size s : {gpu_test::Size{17, 9}, gpu_test::Size{321, 241}}) {
      ProcessingConfig c = dcp_config();
      c.dcp.patch_radius = k.patch;
      c.dcp.gf_radius = k.gf_radius;
      c.dcp.gf_subsample = k.subsample;
      c.dcp.k_tolerance = k.k;
      c.dcp.brightness = k.brightness;
      c.dcp.omega = k.omega;
      const std::uint32_t seed = fresh_seed();
      Image in = gpu_test::make_image(PixelFormat::yuv420p, s.w, s.h);
      gpu_test::fill_smooth(in.view(), seed);
      Image a = gpu_test::make_image(PixelFormat::yuv420p, s.w, s.h);
      Image b = gpu_test::make_image(PixelFormat::yuv420p, s.w, s.h);
      make_cpu_processor(c)->process(in.view(), a.view());
      make_cuda_processor(c)->process(in.view(), b.view());
      const gpu_test::FrameDiff d = gpu_test::compare(a.view(), b.view());
      INFO("patch ", k.patch, " gf ", k.gf_radius, "/", k.subsample, " seed ", seed, " ", d.text());
      CHECK(d.mean_abs() <= 1.0);
      CHECK(d.fraction_over_2() <= 0.001);
    }
}

TEST_CASE("atmospheric light: the same sequence as the CPU over frames, cuts and reset") {
  // 240 blocks: 0.05 takes 12 (rounds of argmax on the GPU), 0.5 takes 120 (radix select).
  for (const float fraction : {0.05f, 0.5f}) {
  INFO("a_top_fraction ", fraction);
  ProcessingConfig c = dcp_config();
  c.dcp.a_top_fraction = fraction;
  auto cpu = make_cpu_processor(c);
  auto gpu = make_cuda_processor(c);
  const int w = 640, h = 360;
  for (int frame = 0; frame < 12; ++frame) {
    if (frame == 8) {
      cpu->reset();
      gpu->reset();
    }
    Image in = gpu_test::make_image(PixelFormat::yuv420p, w, h);
    const std::uint32_t seed = fresh_seed();
    // Frames 0-4 drift slowly; frame 5 is a cut (different content); ties in flat areas.
    if (frame == 5) gpu_test::fill_random(in.view(), seed, 0, 255);
    else gpu_test::fill_smooth(in.view(), 1000 + frame);
    Image a = gpu_test::make_image(PixelFormat::yuv420p, w, h);
    Image b = gpu_test::make_image(PixelFormat::yuv420p, w, h);
    cpu->process(in.view(), a.view());
    gpu->process(in.view(), b.view());
    const auto ac = cpu->atmospheric_light(), ag = gpu->atmospheric_light();
    INFO("frame ", frame, " cpu ", ac[0], ",", ac[1], ",", ac[2], " gpu ", ag[0], ",", ag[1], ",", ag[2]);
    CHECK(ac[0] == ag[0]);
    CHECK(ac[1] == ag[1]);
    CHECK(ac[2] == ag[2]);
  }
  // Saturated frames: many blocks tie at the maximum (ranked by grey, then index).
  Image white = gpu_test::make_image(PixelFormat::rgb24, 200, 130);
  gpu_test::fill_random(white.view(), 5, 250, 255);
  Image a = gpu_test::make_image(PixelFormat::rgb24, 200, 130);
  Image b = gpu_test::make_image(PixelFormat::rgb24, 200, 130);
  cpu->reset();
  gpu->reset();
  cpu->process(white.view(), a.view());
  gpu->process(white.view(), b.view());
  CHECK(cpu->atmospheric_light() == gpu->atmospheric_light());
  }
}

TEST_CASE("two lanes from pinned memory give the frames and A sequence of one-by-one processing") {
  for (const Mode mode : {Mode::dcp, Mode::he}) {
    ProcessingConfig c;
    c.mode = mode;
    c.he.temporal = 0.4f;
    const int w = 480, h = 270, frames = 7;
    const PixelFormat f = PixelFormat::yuv420p;
    const std::size_t bytes = frame_bytes(f, w, h, 64);
    cuda::PinnedBuffer<std::uint8_t> pin_in(bytes * frames), pin_out(bytes * frames);
    std::vector<ImageView> ins, outs;
    for (int i = 0; i < frames; ++i) {
      ins.push_back(make_view(f, w, h, pin_in.get() + bytes * i, 64));
      outs.push_back(make_view(f, w, h, pin_out.get() + bytes * i, 64));
      gpu_test::fill_smooth(ins.back(), 300 + 17 * i);
    }
    cuda::CudaProcessor lanes(c, 2);
    // Frame i on lane i % 2, waiting for a lane only before reusing it.
    for (int i = 0; i < frames; ++i) {
      if (i >= 2) lanes.wait(i % 2);
      lanes.enqueue(i % 2, ins[i], outs[i]);
    }
    lanes.wait(0);
    lanes.wait(1);
    auto single = make_cuda_processor(c);
    for (int i = 0; i < frames; ++i) {
      Image expected = gpu_test::make_image(f, w, h);
      single->process(ins[i], expected.view());
      INFO(to_string(mode), " frame ", i);
      CHECK(gpu_test::compare(expected.view(), outs[i]).differing == 0);
    }
    CHECK(single->atmospheric_light() == lanes.atmospheric_light());
    const std::vector<StageTime> times = lanes.stage_times();
    CHECK(!times.empty());
  }
}


TEST_CASE("haze index and auto strength: the CPU's index and omega exactly, frames within tolerance") {
  // Fused (r <= 16) and two-pass (r = 20) dark channels; clear frames, a reset (the index
  // restarts: it moves slowly otherwise), a veil that thickens, other content, a reset.
  for (const int patch : {7, 20}) {
    ProcessingConfig c = dcp_config();
    c.dcp.patch_radius = patch;
    c.dcp.auto_strength = true;
    auto cpu = make_cpu_processor(c);
    auto gpu = make_cuda_processor(c);
    const int w = 640, h = 360;
    int differing_index = 0;
    float lowest = 1.f, highest = 0.f;
    for (int frame = 0; frame < 12; ++frame) {
      if (frame == 4 || frame == 9) {
        cpu->reset();
        gpu->reset();
      }
      Image in = gpu_test::make_image(PixelFormat::yuv420p, w, h);
      // Grey pictures (neutral chroma): frames 0-3 down to black (clear), 4-7 lifted by a
      // growing veil, 8 a cut.
      const int floor = frame < 4 ? 0 : frame < 8 ? 16 + 25 * (frame - 3) : 0;
      gpu_test::fill_random(in.view(), frame == 8 ? fresh_seed() : 100 + frame, floor, 255);
      for (int p = 1; p < in.view().plane_count; ++p) {
        const PlaneView& plane = in.view().planes[p];
        for (int y = 0; y < plane.height; ++y)
          std::memset(plane.data + static_cast<std::size_t>(y) * plane.stride, 128, static_cast<std::size_t>(plane.width));
      }
      Image a = gpu_test::make_image(PixelFormat::yuv420p, w, h);
      Image b = gpu_test::make_image(PixelFormat::yuv420p, w, h);
      cpu->process(in.view(), a.view());
      gpu->process(in.view(), b.view());
      const DehazeStats sc = cpu->dehaze_stats(0), sg = gpu->dehaze_stats(0);
      const gpu_test::FrameDiff d = gpu_test::compare(a.view(), b.view());
      INFO("patch ", patch, " frame ", frame, " cpu h ", sc.haze_index, " omega ", sc.omega, " gpu h ",
           sg.haze_index, " omega ", sg.omega, " ", d.text());
      REQUIRE(sc.valid);
      REQUIRE(sg.valid);
      CHECK(sc.haze_index == sg.haze_index);
      CHECK(sc.omega == sg.omega);
      CHECK(sc.atmospheric_light == sg.atmospheric_light);
      CHECK(cpu->temporal_state().haze == gpu->temporal_state().haze);
      CHECK(d.mean_abs() <= 1.0);
      CHECK(d.fraction_over_2() <= 0.001);
      differing_index += sc.haze_index != sg.haze_index;
      lowest = std::min(lowest, sc.haze_index);
      highest = std::max(highest, sc.haze_index);
    }
    MESSAGE("haze index, patch ", patch, ": CPU and CUDA differ on ", differing_index, " of 12 frames; range ",
            lowest, " to ", highest);
    CHECK(lowest < 0.03f);   // the clear frames
    CHECK(highest > 0.07f);   // the veiled ones
  }
  // The job's estimate of a frame (steps 1 and 2 of the chain alone on the GPU) carries the same
  // A^ and raw index on both, through the fused and the two-pass dark channel.
  for (const int patch : {7, 20}) {
    ProcessingConfig c = dcp_config();
    c.dcp.patch_radius = patch;
    Image in = gpu_test::make_image(PixelFormat::nv12, 321, 241);
    gpu_test::fill_random(in.view(), fresh_seed(), 60, 255);
    {
      const PlaneView& uv = in.view().planes[1];
      for (int y = 0; y < uv.height; ++y)
        std::memset(uv.data + static_cast<std::size_t>(y) * uv.stride, 128, static_cast<std::size_t>(uv.width) * 2);
    }
    const FrameEstimate ec = make_cpu_processor(c)->estimate(in.view());
    const FrameEstimate eg = make_cuda_processor(c)->estimate(in.view());
    INFO("patch ", patch);
    CHECK(ec.haze == eg.haze);
    CHECK(ec.light == eg.light);
    CHECK(ec.haze > 0.0f);
  }
}

}  // namespace hazefree
