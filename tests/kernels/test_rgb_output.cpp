// The interleaved RGB output of a processed frame (kernels/rgb_output.hpp) on the CPU backend:
// every layout at 8 bits and at 10, 12 and 16 bits, to 8-bit RGB and to RGB at depth, against
// what the planar conversions give (8 bits: frame_to_rgb_u8; at depth: frame_to_rgb_depth, grey
// by its luma rule; an 8-bit output of a deeper frame: the frame first taken to 8 bits sample by
// sample), exact anchors, the processor's process_to_rgb, and outputs that do not fit refused.
#include <doctest/doctest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/image.hpp"
#include "common/sample_depth.hpp"
#include "kernels/color_convert.hpp"
#include "kernels/color_fixed_rules.hpp"
#include "kernels/cpu/color_convert_int.hpp"
#include "kernels/processor.hpp"
#include "kernels/rgb_output.hpp"
#include "support/sample_access.hpp"

using namespace hazefree;

namespace {

constexpr PixelFormat kFormats[] = {PixelFormat::yuv420p, PixelFormat::yuv422p, PixelFormat::yuv444p,
                                    PixelFormat::nv12,    PixelFormat::gray8,   PixelFormat::rgb24};

Image random_frame(PixelFormat f, int w, int h, int depth, ColorRange range, std::uint32_t seed) {
  Image img(f, w, h, 64, depth);
  img.view().matrix = h >= 720 ? ColorMatrix::bt709 : ColorMatrix::bt601;
  img.view().range = range;
  samples::fill_random_codes(img.view(), seed);
  return img;
}

// Planar codes -> interleaved rgb24 rows of `out`'s depth.
template <typename Sample>
Image interleaved(const std::vector<Sample>& r, const std::vector<Sample>& g, const std::vector<Sample>& b,
                  int w, int h, int depth) {
  Image out(PixelFormat::rgb24, w, h, 64, depth);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const std::size_t i = static_cast<std::size_t>(y) * w + x;
      samples::set_sample(out.view(), 0, 3 * x, y, r[i]);
      samples::set_sample(out.view(), 0, 3 * x + 1, y, g[i]);
      samples::set_sample(out.view(), 0, 3 * x + 2, y, b[i]);
    }
  return out;
}

// What the planar conversions give for `in` as RGB at `out_depth`.
Image expected_rgb(const ImageView& in, int out_depth) {
  const int w = in.width, h = in.height;
  const std::size_t n = static_cast<std::size_t>(w) * h;
  if (out_depth > 8) {
    std::vector<std::uint16_t> r(n), g(n), b(n);
    if (in.format == PixelFormat::gray8) {
      const color::YuvToRgbDepthI k = color::yuv_to_rgb_depth_i(in.matrix, in.range, in.depth);
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
          r[static_cast<std::size_t>(y) * w + x] =
              static_cast<std::uint16_t>(color::yuv_to_rgb_depth(k, samples::sample(in, 0, x, y), k.c_zero, k.c_zero).r);
      g = r;
      b = r;
    } else {
      cpu::frame_to_rgb_depth(in, cpu::RgbPlanesU16{r.data(), g.data(), b.data(), w}, 1);
    }
    return interleaved(r, g, b, w, h, out_depth);
  }
  Image eight(in.format, w, h, 64, 8);
  eight.view().matrix = in.matrix;
  eight.view().range = in.range;
  const ColorRange rule = in.format == PixelFormat::rgb24 ? ColorRange::full : in.range;
  for (int p = 0; p < in.plane_count; ++p)
    for (int y = 0; y < in.planes[p].height; ++y)
      for (int i = 0; i < samples::row_samples(in, p); ++i)
        samples::set_sample(eight.view(), p, i, y, convert_sample_depth(samples::sample(in, p, i, y), in.depth, 8, rule));
  std::vector<std::uint8_t> r(n), g(n), b(n);
  cpu::frame_to_rgb_u8(eight.view(), RgbPlanesU8{r.data(), g.data(), b.data(), w}, 1);
  return interleaved(r, g, b, w, h, 8);
}

long long differing(const ImageView& a, const ImageView& b) {
  long long n = 0;
  for (int y = 0; y < a.height; ++y)
    for (int i = 0; i < 3 * a.width; ++i) n += samples::sample(a, 0, i, y) != samples::sample(b, 0, i, y);
  return n;
}

}  // namespace

TEST_CASE("RGB output: every layout and depth, to 8 bits and at depth, as the planar conversions give") {
  const int sizes[][2] = {{1, 1}, {3, 2}, {17, 9}, {64, 35}};
  std::uint32_t seed = 11;
  for (const int depth : {8, 10, 12, 16})
    for (const PixelFormat f : kFormats)
      for (const ColorRange range : {ColorRange::limited, ColorRange::full})
        for (const auto& s : sizes)
          for (const int out_depth : {8, depth}) {
            const Image in = random_frame(f, s[0], s[1], depth, range, ++seed);
            Image rgb(PixelFormat::rgb24, s[0], s[1], 64, out_depth);
            cpu::frame_to_interleaved_rgb(in.view(), rgb.view(), 2);
            INFO(format_name(f, depth), " ", s[0], "x", s[1], " ", range == ColorRange::limited ? "limited" : "full", " to ", out_depth, " bits");
            CHECK(differing(rgb.view(), expected_rgb(in.view(), out_depth).view()) == 0);
          }
}

TEST_CASE("RGB output: anchors of grey and RGB") {
  Image grey(PixelFormat::gray8, 2, 1, 64, 10);
  grey.view().range = ColorRange::limited;
  samples::set_sample(grey.view(), 0, 0, 0, 64);   // black at 10 bits
  samples::set_sample(grey.view(), 0, 1, 0, 940);  // white
  Image eight(PixelFormat::rgb24, 2, 1, 64, 8), deep(PixelFormat::rgb24, 2, 1, 64, 10);
  cpu::frame_to_interleaved_rgb(grey.view(), eight.view(), 1);
  cpu::frame_to_interleaved_rgb(grey.view(), deep.view(), 1);
  for (int c = 0; c < 3; ++c) {
    CHECK(samples::sample(eight.view(), 0, c, 0) == 0);
    CHECK(samples::sample(eight.view(), 0, 3 + c, 0) == 255);
    CHECK(samples::sample(deep.view(), 0, c, 0) == 0);
    CHECK(samples::sample(deep.view(), 0, 3 + c, 0) == 1023);
  }
  Image rgb48(PixelFormat::rgb24, 1, 1, 64, 16);
  samples::set_sample(rgb48.view(), 0, 0, 0, 65535);
  samples::set_sample(rgb48.view(), 0, 1, 0, 257);
  samples::set_sample(rgb48.view(), 0, 2, 0, 0);
  Image rgb24(PixelFormat::rgb24, 1, 1, 64, 8);
  cpu::frame_to_interleaved_rgb(rgb48.view(), rgb24.view(), 1);
  CHECK(samples::sample(rgb24.view(), 0, 0, 0) == 255);
  CHECK(samples::sample(rgb24.view(), 0, 1, 0) == 1);
  CHECK(samples::sample(rgb24.view(), 0, 2, 0) == 0);
}

TEST_CASE("RGB output: the CPU processor's process_to_rgb is its frame, converted") {
  ProcessingConfig config;
  config.mode = Mode::he;
  for (const int depth : {8, 12}) {
    const Image in = random_frame(PixelFormat::yuv420p, 33, 20, depth, ColorRange::limited, 5u + depth);
    Image processed(PixelFormat::yuv420p, 33, 20, 64, depth);
    make_cpu_processor(config)->process(in.view(), processed.view());
    for (const int out_depth : {8, depth}) {
      Image rgb(PixelFormat::rgb24, 33, 20, 64, out_depth);
      make_cpu_processor(config)->process_to_rgb(in.view(), rgb.view());
      CHECK(differing(rgb.view(), expected_rgb(processed.view(), out_depth).view()) == 0);
    }
  }
}

TEST_CASE("RGB output: an output that does not fit is refused") {
  const Image in = random_frame(PixelFormat::yuv420p, 8, 4, 10, ColorRange::limited, 3);
  Image small(PixelFormat::rgb24, 4, 4, 64, 8), twelve(PixelFormat::rgb24, 8, 4, 64, 12), yuv(PixelFormat::yuv420p, 8, 4, 64, 8);
  CHECK_THROWS_WITH_AS(cpu::frame_to_interleaved_rgb(in.view(), small.view()),
                       "rgb: a rgb24 4x4 frame, expected rgb24 8x4", std::invalid_argument);
  CHECK_THROWS_WITH_AS(cpu::frame_to_interleaved_rgb(in.view(), twelve.view()),
                       "rgb: 12 bits per sample, expected 8 or the frame's 10", std::invalid_argument);
  CHECK_THROWS_AS(cpu::frame_to_interleaved_rgb(in.view(), yuv.view()), std::invalid_argument);
  ProcessingConfig config;
  config.mode = Mode::he;
  CHECK_THROWS_AS(make_cpu_processor(config)->process_to_rgb(in.view(), small.view()), std::invalid_argument);
}
