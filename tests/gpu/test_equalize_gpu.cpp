// HE and AHE/CLAHE on the GPU against the CPU backend: bit-exact on every format, colour mode,
// size and parameter of the tables, on fresh random and smooth frames.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "gpu/gpu_test_util.hpp"
#include "kernels/cuda/cuda_memory.hpp"
#include "kernels/cuda/cuda_processor.hpp"
#include "kernels/cuda/equalize_cuda.hpp"
#include "kernels/processor.hpp"

namespace hazefree {
namespace {

using gpu_test::compare;
using gpu_test::describe;
using gpu_test::fresh_seed;
using gpu_test::ahe_config;
using gpu_test::he_config;

// Runs one frame through both backends and requires identical output.
void check_exact(const ProcessingConfig& config, PixelFormat format, int w, int h, bool smooth,
                 ColorRange range = ColorRange::limited) {
  if (gpu_test::skip_large(w, h)) return;
  const std::uint32_t seed = fresh_seed();
  INFO(describe(format, w, h), " mode ", to_string(config.mode), " color ", to_string(config.color),
       " window ", config.ahe.window, " clip ", config.ahe.clip, " seed ", seed,
       smooth ? " smooth" : " random", range == ColorRange::full ? " full" : " limited");
  Image in = gpu_test::make_image(format, w, h);
  if (smooth) gpu_test::fill_smooth(in.view(), seed);
  else gpu_test::fill_random(in.view(), seed);
  if (is_yuv(format)) in.view().range = range;
  Image expected = gpu_test::make_image(format, w, h);
  Image actual = gpu_test::make_image(format, w, h);
  gpu_test::poison(actual.view());
  make_cpu_processor(config)->process(in.view(), expected.view());
  make_cuda_processor(config)->process(in.view(), actual.view());
  const gpu_test::FrameDiff d = compare(expected.view(), actual.view());
  INFO(d.text());
  CHECK(d.differing == 0);
}

// Both 8-bit AHE/CLAHE kernels called directly on a frame's Y plane, whichever of them the
// processor would pick for the window: the column histograms' (AheCuda) and the sliding samples'
// of the depths at 8 bits (AheDepthCuda), each against the CPU backend's Y plane.
void check_both_kernels(int window, float clip, int w, int h, bool smooth, ColorRange range) {
  if (gpu_test::skip_large(w, h)) return;
  const std::uint32_t seed = fresh_seed();
  INFO(w, "x", h, " window ", window, " clip ", clip, " seed ", seed, smooth ? " smooth" : " random",
       range == ColorRange::full ? " full" : " limited");
  Image in = gpu_test::make_image(PixelFormat::yuv420p, w, h);
  if (smooth) gpu_test::fill_smooth(in.view(), seed);
  else gpu_test::fill_random(in.view(), seed);
  in.view().range = range;
  const ProcessingConfig config = ahe_config(ColorMode::luma, window, clip);
  Image expected = gpu_test::make_image(PixelFormat::yuv420p, w, h);
  make_cpu_processor(config)->process(in.view(), expected.view());

  const int stride = (w + 127) / 128 * 128;
  const std::size_t bytes = static_cast<std::size_t>(stride) * h;
  cuda::DeviceBuffer<std::uint8_t> d_src(bytes), d_columns(bytes), d_samples(bytes);
  const PlaneView& y = in.view().planes[0];
  HAZEFREE_CUDA_CHECK(cudaMemcpy2D(d_src.get(), stride, y.data, y.stride, w, h, cudaMemcpyHostToDevice));
  const cuda::DevicePlaneU8 src{d_src.get(), w, h, stride};
  const cuda::DevicePlaneU8 by_columns{d_columns.get(), w, h, stride};
  const cuda::DevicePlaneU8 by_samples{d_samples.get(), w, h, stride};
  const bool limited = range == ColorRange::limited;
  cuda::AheCuda columns;
  cuda::AheDepthCuda samples;
  columns.apply(&src, &by_columns, 1, config.ahe, limited, nullptr);
  samples.apply(&src, &by_samples, 1, config.ahe, limited, nullptr);
  std::vector<std::uint8_t> a(bytes), b(bytes);
  HAZEFREE_CUDA_CHECK(cudaMemcpy(a.data(), d_columns.get(), bytes, cudaMemcpyDeviceToHost));
  HAZEFREE_CUDA_CHECK(cudaMemcpy(b.data(), d_samples.get(), bytes, cudaMemcpyDeviceToHost));
  const PlaneView& e = expected.view().planes[0];
  long long columns_differ = 0, samples_differ = 0;
  for (int row = 0; row < h; ++row)
    for (int x = 0; x < w; ++x) {
      const std::uint8_t want = e.data[static_cast<std::size_t>(row) * e.stride + x];
      columns_differ += a[static_cast<std::size_t>(row) * stride + x] != want;
      samples_differ += b[static_cast<std::size_t>(row) * stride + x] != want;
    }
  CHECK(columns_differ == 0);
  CHECK(samples_differ == 0);
}

}  // namespace

TEST_CASE("both 8-bit AHE/CLAHE kernels match the CPU, windows 3..1001") {
  for (const int window : {3, 31, 63, 127, 255, 511, 1001})
    for (const float clip : {0.f, 2.f, 40.f}) {
      check_both_kernels(window, clip, 173, 91, false, ColorRange::limited);
      check_both_kernels(window, clip, 301, 257, true, ColorRange::full);
    }
  for (const int window : {31, 127, 511})
    for (const float clip : {0.f, 2.f}) check_both_kernels(window, clip, 1920, 1080, true, ColorRange::limited);
}

TEST_CASE("HE matches the CPU on every format, colour mode and size") {
  for (const ColorMode color : {ColorMode::luma, ColorMode::rgb, ColorMode::grey, ColorMode::rgb_bits})
    for (const PixelFormat f : gpu_test::all_formats())
      for (const gpu_test::Size s : gpu_test::all_sizes()) {
        if (s.w * s.h > 2'000'000 && f != PixelFormat::yuv420p && f != PixelFormat::rgb24) continue;
        check_exact(he_config(color), f, s.w, s.h, false);
        check_exact(he_config(color), f, s.w, s.h, true);
      }
}

TEST_CASE("HE full-range video and constant frames") {
  for (const PixelFormat f : {PixelFormat::yuv420p, PixelFormat::nv12, PixelFormat::yuv444p})
    check_exact(he_config(ColorMode::luma), f, 321, 241, true, ColorRange::full);
  // A constant frame is left unchanged.
  for (const PixelFormat f : gpu_test::all_formats()) {
    Image in = gpu_test::make_image(f, 40, 30);
    gpu_test::fill_random(in.view(), 1, 77, 77);
    Image a = gpu_test::make_image(f, 40, 30), b = gpu_test::make_image(f, 40, 30);
    for (const ColorMode color : {ColorMode::luma, ColorMode::rgb, ColorMode::grey, ColorMode::rgb_bits}) {
      make_cpu_processor(he_config(color))->process(in.view(), a.view());
      make_cuda_processor(he_config(color))->process(in.view(), b.view());
      INFO(describe(f, 40, 30), " ", to_string(color));
      CHECK(compare(a.view(), b.view()).differing == 0);
    }
  }
}

TEST_CASE("HE with a region of interest") {
  const Roi rois[] = {{0, 0, 0, 0}, {10, 20, 100, 50}, {300, 200, 100, 100}, {0, 0, 1, 1},
                      {500, 500, 10, 10} /* outside: whole frame */, {5, 5, 316, 1}};
  for (const Roi& roi : rois)
    for (const ColorMode color : {ColorMode::luma, ColorMode::rgb, ColorMode::rgb_bits})
      for (const PixelFormat f : {PixelFormat::yuv420p, PixelFormat::rgb24, PixelFormat::gray8}) {
        ProcessingConfig c = he_config(color);
        c.he.roi = roi;
        INFO("roi ", roi.x, ",", roi.y, ",", roi.w, ",", roi.h);
        check_exact(c, f, 321, 241, true);
      }
}

TEST_CASE("HE temporal smoothing gives the CPU's frames in sequence, through reset and resize") {
  for (const ColorMode color : {ColorMode::luma, ColorMode::rgb, ColorMode::rgb_bits})
    for (const float alpha : {0.05f, 0.3f, 0.9f}) {
      ProcessingConfig c = he_config(color);
      c.he.temporal = alpha;
      auto cpu = make_cpu_processor(c);
      auto gpu = make_cuda_processor(c);
      const gpu_test::Size sizes[] = {{321, 241}, {321, 241}, {321, 241}, {200, 100}, {200, 100}, {321, 241}};
      int frame = 0;
      for (const gpu_test::Size s : sizes) {
        if (frame == 4) {
          cpu->reset();
          gpu->reset();
        }
        const std::uint32_t seed = fresh_seed();
        Image in = gpu_test::make_image(PixelFormat::yuv420p, s.w, s.h);
        gpu_test::fill_smooth(in.view(), seed);
        Image a = gpu_test::make_image(PixelFormat::yuv420p, s.w, s.h);
        Image b = gpu_test::make_image(PixelFormat::yuv420p, s.w, s.h);
        cpu->process(in.view(), a.view());
        gpu->process(in.view(), b.view());
        const gpu_test::FrameDiff d = compare(a.view(), b.view());
        INFO("color ", to_string(color), " alpha ", alpha, " frame ", frame, " seed ", seed, " ", d.text());
        CHECK(d.differing == 0);
        ++frame;
      }
    }
}

TEST_CASE("AHE and CLAHE match the CPU for windows 3..511, clips 0/2/40, on odd sizes") {
  for (const int window : {3, 5, 31, 63, 127})
    for (const float clip : {0.f, 2.f, 40.f})
      for (const gpu_test::Size s : gpu_test::small_sizes()) {
        check_exact(ahe_config(ColorMode::luma, window, clip), PixelFormat::gray8, s.w, s.h, false);
        check_exact(ahe_config(ColorMode::luma, window, clip), PixelFormat::yuv420p, s.w, s.h, true);
      }
}

TEST_CASE("AHE and CLAHE at HD and 4K with large windows") {
  for (const int window : {31, 255, 511})
    for (const float clip : {0.f, 2.f}) {
      check_exact(ahe_config(ColorMode::luma, window, clip), PixelFormat::yuv420p, 1920, 1080, true);
    }
  check_exact(ahe_config(ColorMode::luma, 63, 0.f), PixelFormat::nv12, 4096, 2160, false);
  check_exact(ahe_config(ColorMode::luma, 511, 40.f), PixelFormat::gray8, 4096, 2160, true);
  // A window wider than the frame: the radius is reduced (reflect-101 still valid).
  check_exact(ahe_config(ColorMode::luma, 1001, 0.f), PixelFormat::gray8, 700, 300, true);
  check_exact(ahe_config(ColorMode::luma, 8191, 2.f), PixelFormat::yuv420p, 90, 40, false);
}

TEST_CASE("AHE colour modes on every format") {
  for (const ColorMode color : {ColorMode::luma, ColorMode::rgb, ColorMode::grey})
    for (const PixelFormat f : gpu_test::all_formats())
      for (const gpu_test::Size s : {gpu_test::Size{3, 2}, gpu_test::Size{17, 9}, gpu_test::Size{321, 241}}) {
        check_exact(ahe_config(color, 15, 0.f), f, s.w, s.h, true);
        check_exact(ahe_config(color, 31, 2.f), f, s.w, s.h, false);
      }
}

}  // namespace hazefree
