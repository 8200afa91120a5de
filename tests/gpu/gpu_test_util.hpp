// Helpers of the GPU tests: frame builders (fresh random and smooth content), comparisons of
// frames with statistics, and the tables of sizes and formats every operator is checked on.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "common/image.hpp"
#include "common/params.hpp"

namespace hazefree::gpu_test {

struct Size {
  int w, h;
};

// Sizes of the SPEC's tables: degenerate, odd, block-unaligned, HD and 4K.
inline const std::vector<Size>& small_sizes() {
  static const std::vector<Size> s = {{1, 1}, {2, 2}, {3, 2}, {2, 3}, {17, 9}, {33, 31}, {321, 241}};
  return s;
}
inline const std::vector<Size>& all_sizes() {
  static const std::vector<Size> s = {{1, 1},   {2, 2},     {3, 2},      {17, 9},
                                      {321, 241}, {1920, 1080}, {4096, 2160}};
  return s;
}
inline const std::vector<PixelFormat>& all_formats() {
  static const std::vector<PixelFormat> f = {PixelFormat::yuv420p, PixelFormat::yuv422p,
                                             PixelFormat::yuv444p, PixelFormat::nv12,
                                             PixelFormat::gray8,   PixelFormat::rgb24};
  return f;
}

// Configurations the CPU and CUDA backends are compared on.
inline ProcessingConfig dcp_config() {
  ProcessingConfig c;
  c.mode = Mode::dcp;
  return c;
}
inline ProcessingConfig he_config(ColorMode color, float temporal = 1.f, Roi roi = {}) {
  ProcessingConfig c;
  c.mode = Mode::he;
  c.color = color;
  c.he.temporal = temporal;
  c.he.roi = roi;
  return c;
}
inline ProcessingConfig ahe_config(ColorMode color, int window, float clip) {
  ProcessingConfig c;
  c.mode = Mode::ahe;
  c.color = color;
  c.ahe.window = window;
  c.ahe.clip = clip;
  return c;
}

// HAZEFREE_GPU_TESTS_SMALL=1 (under compute-sanitizer) skips frames above 0.2 Mpixel.
inline bool skip_large(int w, int h) {
  static const bool small = std::getenv("HAZEFREE_GPU_TESTS_SMALL") != nullptr;
  return small && static_cast<long long>(w) * h > 200'000;
}

// A seed drawn fresh on each run (printed with any failure, so it can be replayed by setting
// HAZEFREE_TEST_SEED).
inline std::uint32_t fresh_seed() {
  static const std::uint32_t base = [] {
    if (const char* s = std::getenv("HAZEFREE_TEST_SEED")) return static_cast<std::uint32_t>(std::strtoul(s, nullptr, 10));
    return static_cast<std::uint32_t>(std::random_device{}());
  }();
  static std::uint32_t counter = 0;
  return base + 7919u * counter++;
}

inline std::string describe(PixelFormat f, int w, int h) {
  return std::string(to_string(f)) + " " + std::to_string(w) + "x" + std::to_string(h);
}

// Rows padded to 64 bytes plus a few more, so that stride mistakes show.
inline Image make_image(PixelFormat f, int w, int h) { return Image(f, w, h, 64); }

inline void fill_random(ImageView& v, std::uint32_t seed, int low = 0, int high = 255) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(low, high);
  for (int i = 0; i < v.plane_count; ++i) {
    const PlaneView& p = v.planes[i];
    const int row = p.width * bytes_per_sample(v.format, i);
    for (int y = 0; y < p.height; ++y)
      for (int x = 0; x < row; ++x)
        p.data[static_cast<std::size_t>(y) * p.stride + x] = static_cast<std::uint8_t>(dist(rng));
  }
}

// Smooth haze-like content: gradients, a bright region, mild noise.
inline void fill_smooth(ImageView& v, std::uint32_t seed) {
  std::mt19937 rng(seed);
  const double phase = (seed % 1000) * 0.001;
  for (int i = 0; i < v.plane_count; ++i) {
    const PlaneView& p = v.planes[i];
    const int bps = bytes_per_sample(v.format, i);
    for (int y = 0; y < p.height; ++y)
      for (int x = 0; x < p.width * bps; ++x) {
        const int sx = x / bps;
        double value = 90.0 + 60.0 * std::sin(0.02 * sx + phase + 0.5 * (x % bps)) *
                                  std::cos(0.015 * y + 0.3 * i);
        const double dx = sx - p.width * 0.7, dy = y - p.height * 0.2;
        if (dx * dx + dy * dy < 0.02 * p.width * p.width) value += 80.0;
        value += static_cast<int>(rng() % 9) - 4;
        p.data[static_cast<std::size_t>(y) * p.stride + x] =
            static_cast<std::uint8_t>(std::clamp(static_cast<int>(value), 0, 255));
      }
  }
}

// Poisons a frame (every byte 0xA5 ^ plane) so that unwritten output shows.
inline void poison(ImageView& v) {
  for (int i = 0; i < v.plane_count; ++i) {
    const PlaneView& p = v.planes[i];
    for (int y = 0; y < p.height; ++y)
      std::fill(p.data + static_cast<std::size_t>(y) * p.stride,
                p.data + static_cast<std::size_t>(y) * p.stride + p.width * bytes_per_sample(v.format, i),
                static_cast<std::uint8_t>(0xA5 ^ (i * 0x3C)));
  }
}

struct FrameDiff {
  long long samples = 0;
  int max_abs = 0;
  long long over_2 = 0;  // samples differing by more than 2 levels
  long long differing = 0;
  double sum_abs = 0.0;
  int first_x = -1, first_y = -1, first_plane = -1, first_a = 0, first_b = 0;
  double mean_abs() const { return samples ? sum_abs / samples : 0.0; }
  double fraction_over_2() const { return samples ? static_cast<double>(over_2) / samples : 0.0; }
  std::string text() const {
    return "max " + std::to_string(max_abs) + ", mean " + std::to_string(mean_abs()) + ", >2: " +
           std::to_string(over_2) + "/" + std::to_string(samples) + ", differing " +
           std::to_string(differing) + (differing ? ", first at plane " + std::to_string(first_plane) +
                                                        " (" + std::to_string(first_x) + "," +
                                                        std::to_string(first_y) + "): " +
                                                        std::to_string(first_a) + " vs " +
                                                        std::to_string(first_b)
                                                  : std::string());
  }
};

inline FrameDiff compare(const ImageView& a, const ImageView& b) {
  FrameDiff d;
  for (int i = 0; i < a.plane_count; ++i) {
    const PlaneView& pa = a.planes[i];
    const PlaneView& pb = b.planes[i];
    const int row = pa.width * bytes_per_sample(a.format, i);
    for (int y = 0; y < pa.height; ++y)
      for (int x = 0; x < row; ++x) {
        const int va = pa.data[static_cast<std::size_t>(y) * pa.stride + x];
        const int vb = pb.data[static_cast<std::size_t>(y) * pb.stride + x];
        const int e = std::abs(va - vb);
        ++d.samples;
        d.sum_abs += e;
        if (e) {
          if (!d.differing) {
            d.first_x = x;
            d.first_y = y;
            d.first_plane = i;
            d.first_a = va;
            d.first_b = vb;
          }
          ++d.differing;
        }
        if (e > 2) ++d.over_2;
        d.max_abs = std::max(d.max_abs, e);
      }
  }
  return d;
}

}  // namespace hazefree::gpu_test
