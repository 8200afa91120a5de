// HE and AHE/CLAHE at depth 10, 12 and 16 (SPEC 7) on the GPU against the CPU backend, bit for
// bit: every format at depth (yuv420p/422p/444p, P010/P016, grey, rgb48), every colour mode, ROI,
// he_temporal over frames (and a stream started from a job's scanned state), windows (one
// reduced) and clips, odd sizes.
#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu/gpu_test_util.hpp"
#include "kernels/cuda/cuda_processor.hpp"
#include "kernels/processor.hpp"
#include "kernels/temporal_state.hpp"

namespace hazefree {
namespace {

using gpu_test::ahe_config;
using gpu_test::fresh_seed;
using gpu_test::he_config;

std::uint16_t* sample_row(const PlaneView& p, int y) {
  return reinterpret_cast<std::uint16_t*>(p.data + static_cast<std::size_t>(y) * p.stride);
}

int samples_per_row(const ImageView& v, int plane) {
  return v.planes[plane].width * bytes_per_sample(v.format, plane, v.depth) / 2;
}

Image make_depth_image(PixelFormat f, int w, int h, int depth, ColorRange range) {
  Image img(f, w, h, 64, depth);
  img.view().range = is_yuv(f) ? range : ColorRange::full;
  img.view().matrix = h >= 720 ? ColorMatrix::bt709 : ColorMatrix::bt601;
  return img;
}

// Random codes in [low, high] (of the depth), or a smooth ramp with a blob and mild noise; stored
// at the layout's shift (P010/P016: the high bits).
void fill(ImageView& v, std::uint32_t seed, bool smooth, int low, int high) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(low, high);
  const int shift = sample_shift(v), max_code = (1 << v.depth) - 1;
  for (int i = 0; i < v.plane_count; ++i) {
    const int n = samples_per_row(v, i);
    const PlaneView& p = v.planes[i];
    for (int y = 0; y < p.height; ++y)
      for (int x = 0; x < n; ++x) {
        int value;
        if (smooth) {
          const double t = 0.25 + 0.4 * x / (n + 1) + 0.2 * y / (p.height + 1) +
                           ((x - n / 3) * (x - n / 3) + (y - p.height / 2) * (y - p.height / 2) < n * n / 30 ? 0.1 : 0.0) +
                           0.003 * static_cast<double>(rng() % 1000) / 1000.0;
          value = static_cast<int>(t * max_code);
          value = value > max_code ? max_code : value;
        } else {
          value = dist(rng);
        }
        sample_row(p, y)[x] = static_cast<std::uint16_t>(value << shift);
      }
  }
}

// Samples that differ between two frames of the same shape (the first few printed).
int differing(const ImageView& a, const ImageView& b) {
  int count = 0;
  for (int i = 0; i < a.plane_count; ++i)
    for (int y = 0; y < a.planes[i].height; ++y)
      for (int x = 0; x < samples_per_row(a, i); ++x) {
        const int va = sample_row(a.planes[i], y)[x], vb = sample_row(b.planes[i], y)[x];
        if (va != vb && ++count <= 3)
          MESSAGE("plane " << i << " (" << x << "," << y << "): cpu " << va << " cuda " << vb);
      }
  return count;
}

std::string describe(PixelFormat f, int w, int h, int depth) {
  return format_name(f, depth) + " " + std::to_string(w) + "x" + std::to_string(h);
}

void check_exact(const ProcessingConfig& config, PixelFormat format, int w, int h, int depth,
                 bool smooth, ColorRange range = ColorRange::limited, int frames = 1) {
  if (gpu_test::skip_large(w, h)) return;
  const std::uint32_t seed = fresh_seed();
  INFO(describe(format, w, h, depth), " mode ", to_string(config.mode), " color ",
       to_string(config.color), " window ", config.ahe.window, " clip ", config.ahe.clip,
       " temporal ", config.he.temporal, " seed ", seed, smooth ? " smooth" : " random",
       range == ColorRange::full ? " full" : " limited");
  auto cpu = make_cpu_processor(config);
  auto gpu = make_cuda_processor(config);
  const int max_code = (1 << depth) - 1;
  for (int k = 0; k < frames; ++k) {
    Image in = make_depth_image(format, w, h, depth, range);
    fill(in.view(), seed + 31u * k, smooth || k % 2 == 1, max_code / 6, max_code / 2 + max_code / 8 * k);
    Image expected = make_depth_image(format, w, h, depth, range);
    Image actual = make_depth_image(format, w, h, depth, range);
    for (int i = 0; i < actual.view().plane_count; ++i)  // unwritten output shows
      for (int y = 0; y < actual.view().planes[i].height; ++y)
        std::memset(actual.view().planes[i].data + static_cast<std::size_t>(y) * actual.view().planes[i].stride,
                    0xA5, static_cast<std::size_t>(samples_per_row(actual.view(), i)) * 2);
    cpu->process(in.view(), expected.view());
    gpu->process(in.view(), actual.view());
    CAPTURE(k);
    CHECK(differing(expected.view(), actual.view()) == 0);
  }
}

// rgb24 exists at depth 16 only (rgb48); nv12 at 10 and 16 (P010, P016) and, as the layout
// allows, 12.
bool format_at(PixelFormat f, int depth) { return f != PixelFormat::rgb24 || depth == 16; }

}  // namespace

TEST_CASE("HE at depth matches the CPU: formats, colour modes, ranges, odd sizes") {
  for (int depth : {10, 12, 16})
    for (PixelFormat f : gpu_test::all_formats()) {
      if (!format_at(f, depth)) continue;
      for (ColorMode color : {ColorMode::luma, ColorMode::grey, ColorMode::rgb})
        for (auto [w, h] : {std::pair{1, 1}, {3, 2}, {17, 9}, {321, 241}})
          for (bool smooth : {false, true})
            check_exact(he_config(color), f, w, h, depth, smooth,
                        smooth ? ColorRange::limited : ColorRange::full);
      check_exact(he_config(ColorMode::luma), f, 1920, 1080, depth, true);
    }
}

TEST_CASE("HE at depth matches the CPU with an ROI and with he_temporal over frames") {
  for (int depth : {10, 12, 16})
    for (PixelFormat f : {PixelFormat::yuv420p, PixelFormat::nv12, PixelFormat::gray8}) {
      check_exact(he_config(ColorMode::luma, 1.f, Roi{7, 5, 150, 90}), f, 321, 241, depth, false);
      check_exact(he_config(ColorMode::luma, 0.3f), f, 321, 241, depth, true, ColorRange::limited, 5);
      check_exact(he_config(ColorMode::rgb, 0.5f, Roi{3, 3, 40, 30}), f, 97, 61, depth, true,
                  ColorRange::limited, 3);
    }
}

TEST_CASE("AHE and CLAHE at depth match the CPU: windows, clips, formats, colour modes") {
  for (int depth : {10, 12, 16})
    for (PixelFormat f : gpu_test::all_formats()) {
      if (!format_at(f, depth)) continue;
      for (ColorMode color : {ColorMode::luma, ColorMode::grey, ColorMode::rgb})
        for (float clip : {0.f, 2.f})
          check_exact(ahe_config(color, 15, clip), f, 157, 93, depth, true);
      for (auto [w, h] : {std::pair{1, 1}, {3, 2}, {17, 9}})
        check_exact(ahe_config(ColorMode::luma, 31, 1.5f), f, w, h, depth, false);  // reduced
    }
  // Windows of 1 to 16 rows per lane move their fine bins by samples; 601 keeps column fine
  // histograms.
  for (int depth : {10, 12, 16})
    for (int window : {3, 31, 63, 127, 255, 301, 601})
      for (float clip : {0.f, 1.f, 4.f, 40.f})
        for (bool smooth : {false, true})
          check_exact(ahe_config(ColorMode::luma, window, clip), PixelFormat::gray8, window > 512 ? 640 : 333,
                      window > 512 ? 611 : 271, depth, smooth, ColorRange::full);
}

TEST_CASE("AHE and CLAHE at depth match the CPU on 1080p P010 and 12-bit 4:2:0, windows to 511") {
  for (int window : {31, 511})
    for (float clip : {0.f, 3.f}) {
      check_exact(ahe_config(ColorMode::luma, window, clip), PixelFormat::nv12, 1920, 1080, 10, true);
      check_exact(ahe_config(ColorMode::luma, window, clip), PixelFormat::yuv420p, 1920, 1080, 12, true);
    }
}

TEST_CASE("HE at depth on the GPU: a stream started from the scanned state renders as the single run") {
  const ProcessingConfig config = he_config(ColorMode::luma, 0.25f);
  for (int depth : {10, 16}) {
    CAPTURE(depth);
    const std::uint32_t seed = fresh_seed();
    CAPTURE(seed);
    std::vector<Image> frames;
    for (int i = 0; i < 6; ++i) {
      frames.push_back(make_depth_image(PixelFormat::yuv420p, 321, 241, depth, ColorRange::limited));
      fill(frames.back().view(), seed + 17u * i, i % 3 != 1, 0, (1 << depth) - 1);
    }
    auto cpu = make_cpu_processor(config);
    auto whole = make_cuda_processor(config);
    TemporalState scanned;
    Image out = make_depth_image(PixelFormat::yuv420p, 321, 241, depth, ColorRange::limited);
    for (int i = 0; i < 5; ++i) {
      advance_temporal_state(config, cpu->estimate(frames[static_cast<std::size_t>(i)].view()), scanned);
      whole->process(frames[static_cast<std::size_t>(i)].view(), out.view());
    }
    const TemporalState gpu_state = whole->temporal_state();
    REQUIRE(gpu_state.channel_history[0].size() == (std::size_t{1} << depth));
    CHECK(gpu_state.channel_history[0] == scanned.channel_history[0]);
    auto part = make_cuda_processor(config);
    part->set_temporal_state(scanned);
    Image a = make_depth_image(PixelFormat::yuv420p, 321, 241, depth, ColorRange::limited);
    Image b = make_depth_image(PixelFormat::yuv420p, 321, 241, depth, ColorRange::limited);
    whole->process(frames[5].view(), a.view());
    part->process(frames[5].view(), b.view());
    CHECK(differing(a.view(), b.view()) == 0);
    // A history of another depth is refused with the CPU's line, not silently restarted.
    TemporalState eight_bit;
    eight_bit.channel_history[0].assign(256, 1.f);
    auto wrong = make_cuda_processor(config);
    wrong->set_temporal_state(eight_bit);
    const std::string refusal = "he: the he_temporal history has 256 bins; this " + std::to_string(depth) +
                                "-bit frame needs " + std::to_string(1 << depth);
    CHECK_THROWS_WITH_AS(wrong->process(frames[0].view(), b.view()), refusal.c_str(), std::invalid_argument);
  }
}

TEST_CASE("rgb-bits at depth is refused on the GPU with the CPU's line") {
  Image in = make_depth_image(PixelFormat::yuv420p, 16, 8, 10, ColorRange::limited);
  fill(in.view(), 1, false, 64, 940);
  Image out = make_depth_image(PixelFormat::yuv420p, 16, 8, 10, ColorRange::limited);
  auto gpu = make_cuda_processor(he_config(ColorMode::rgb_bits));
  CHECK_THROWS_WITH(gpu->process(in.view(), out.view()),
                    "color = rgb-bits works on 8-bit frames only; this frame is 10-bit (yuv420p10)");
}

}  // namespace hazefree
