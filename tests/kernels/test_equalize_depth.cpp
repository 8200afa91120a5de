// Equalization at depth 9..16 (SPEC 7) on the CPU backend against the naive oracles of
// tests/oracles/equalize_oracle.hpp, exactly: global HE over 2^d bins (ROI, he_temporal, the
// limited-range mapping at depth), AHE / CLAHE over 2^min(d, 12) bins, the colour modes, P010,
// thread counts, each compiled copy of the AHE strip bodies (HAZEFREE_CPU_ISA), the he_temporal
// state of jobs, and rgb-bits refused at depth.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/image.hpp"
#include "common/params.hpp"
#include "kernels/color_fixed_rules.hpp"
#include "kernels/equalize.hpp"
#include "kernels/equalize_rules.hpp"
#include "kernels/processor.hpp"
#include "kernels/temporal_state.hpp"
#include "oracles/equalize_oracle.hpp"
#include "test_equalize_helpers.hpp"

namespace hazefree {
namespace {

using oracle::Wide;

std::uint16_t* sample_row(const PlaneView& p, int y) {
  return reinterpret_cast<std::uint16_t*>(p.data + static_cast<std::size_t>(y) * p.stride);
}

int max_code_of(int depth) { return (1 << depth) - 1; }

// Samples per pixel of a plane (rgb48: 3, nv12's UV plane: 2, else 1).
int channels_of(const ImageView& v, int plane) {
  return bytes_per_sample(v.format, plane, v.depth) / sample_bytes(v.depth);
}

// Random values in [low, high] in every plane, stored at the layout's shift.
void fill_random(ImageView& v, std::uint32_t seed, int low, int high) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(low, high);
  const int shift = sample_shift(v);
  for (int i = 0; i < v.plane_count; ++i) {
    const PlaneView& p = v.planes[i];
    const int samples = p.width * channels_of(v, i);
    for (int y = 0; y < p.height; ++y)
      for (int x = 0; x < samples; ++x) sample_row(p, y)[x] = static_cast<std::uint16_t>(dist(rng) << shift);
  }
}

// A smooth ramp over part of the range with a blob and a little noise: natural-image content
// whose columns span few of the 4096 AHE bins.
void fill_smooth(ImageView& v, std::uint32_t seed) {
  std::mt19937 rng(seed);
  const int max_code = max_code_of(v.depth);
  const int shift = sample_shift(v);
  for (int i = 0; i < v.plane_count; ++i) {
    const PlaneView& p = v.planes[i];
    const int ch = channels_of(v, i);
    for (int y = 0; y < p.height; ++y)
      for (int x = 0; x < p.width * ch; ++x) {
        const int sx = x / ch;
        const int dx = sx - p.width / 3, dy = y - p.height / 2;
        const double blob = (dx * dx + dy * dy) < (p.width * p.width) / 25 ? 0.2 : 0.0;
        const double t = 0.2 + 0.35 * sx / (p.width + 1) + 0.15 * y / (p.height + 1) + blob +
                         0.01 * (x % ch) + 0.004 * static_cast<double>(rng() % 1000) / 1000.0;
        const int value = static_cast<int>(t * max_code);
        sample_row(p, y)[x] = static_cast<std::uint16_t>((value > max_code ? max_code : value) << shift);
      }
  }
}

Image make_image(PixelFormat f, int w, int h, int depth, ColorRange range = ColorRange::full) {
  Image img(f, w, h, 64, depth);
  img.view().range = range;
  img.view().matrix = ColorMatrix::bt709;
  return img;
}

// Channel `channel` of plane `plane` as an oracle image (values >> the layout's shift).
Wide wide_of(const ImageView& v, int plane, int channel = 0) {
  const PlaneView& p = v.planes[plane];
  const int ch = channels_of(v, plane);
  const int shift = sample_shift(v);
  Wide g{p.width, p.height, std::vector<std::uint16_t>(static_cast<std::size_t>(p.width) * p.height)};
  for (int y = 0; y < p.height; ++y)
    for (int x = 0; x < p.width; ++x)
      g.pixels[static_cast<std::size_t>(y) * p.width + x] =
          static_cast<std::uint16_t>(sample_row(p, y)[x * ch + channel] >> shift);
  return g;
}

// Pixels that differ (printing the first few).
int count_differences(const Wide& expected, const Wide& actual, const std::string& what) {
  REQUIRE(expected.width == actual.width);
  REQUIRE(expected.height == actual.height);
  int differences = 0;
  for (int y = 0; y < expected.height; ++y)
    for (int x = 0; x < expected.width; ++x)
      if (expected.at(x, y) != actual.at(x, y) && ++differences <= 3)
        MESSAGE(what << ": (" << x << "," << y << ") expected " << expected.at(x, y) << " got "
                     << actual.at(x, y));
  return differences;
}

bool same_planes(const ImageView& a, const ImageView& b) {
  for (int i = 0; i < a.plane_count; ++i)
    for (int y = 0; y < a.planes[i].height; ++y)
      if (std::memcmp(a.planes[i].data + static_cast<std::size_t>(y) * a.planes[i].stride,
                      b.planes[i].data + static_cast<std::size_t>(y) * b.planes[i].stride,
                      static_cast<std::size_t>(a.planes[i].width) * bytes_per_sample(a.format, i, a.depth)) != 0)
        return false;
  return true;
}

Wide mapped(Wide img, int depth) {
  for (std::uint16_t& p : img.pixels) p = static_cast<std::uint16_t>(oracle::limited_code_depth(p, depth));
  return img;
}

Image he_frame(const ImageView& in, HeParams params = {}, ColorMode color = ColorMode::luma,
               int threads = 2) {
  Image out(in.format, in.width, in.height, 32, in.depth);
  cpu::HistogramEqualizer he(params, color, threads);
  he.process(in, out.view());
  return out;
}

Image ahe_frame(const ImageView& in, int window, float clip, ColorMode color = ColorMode::luma,
                int threads = 2) {
  Image out(in.format, in.width, in.height, 32, in.depth);
  AheParams params;
  params.window = window;
  params.clip = clip;
  cpu::AdaptiveEqualizer ahe(params, color, threads);
  ahe.process(in, out.view());
  return out;
}

const int kDepths[] = {10, 12, 16};

}  // namespace

TEST_CASE("depth rules: the limited-range mapping and AHE bins at depth") {
  namespace rules = equalize_rules;
  for (int d = 9; d <= 16; ++d) {
    const int s = d - 8, m = (1 << d) - 1;
    CHECK(rules::limited_range_code(0, d) == (16 << s));
    CHECK(rules::limited_range_code(m, d) == (235 << s));
    CHECK(rules::ahe_bins(d) == (1 << (d < 12 ? d : 12)));
    for (int e : {1, m / 3, m / 2, m - 1})
      CHECK(rules::limited_range_code(e, d) == oracle::limited_code_depth(e, d));
  }
  // 8 bits: the depth forms are the 8-bit rules.
  for (int e = 0; e < 256; ++e) CHECK(rules::limited_range_code(e, 8) == rules::limited_range_code(e));
  for (std::uint32_t excess : {0u, 1u, 77u, 255u, 256u, 1000u})
    for (int v : {0, 1, 100, 255})
      CHECK(rules::clahe_redistributed_below(excess, v, 256) == rules::clahe_redistributed_below(excess, v));
}

TEST_CASE("he at depth: grey 10, 12 and 16 bits equal the SPEC 7 rule (2^d bins, M for 255)") {
  for (int d : kDepths) {
    for (auto [w, h] : {std::pair{1, 1}, {7, 5}, {61, 37}}) {
      CAPTURE(d);
      CAPTURE(w);
      Image in = make_image(PixelFormat::gray8, w, h, d);
      fill_random(in.view(), 11u * d + w, max_code_of(d) / 5, max_code_of(d) / 2);
      const Image out = he_frame(in.view(), HeParams{}, ColorMode::luma);
      const Wide expected = oracle::he_depth(wide_of(in.view(), 0), d);
      CHECK(count_differences(expected, wide_of(out.view(), 0), "he grey") == 0);
      // Every colour mode of a grey frame is the plane itself.
      for (ColorMode c : {ColorMode::grey, ColorMode::rgb})
        CHECK(same_planes(he_frame(in.view(), HeParams{}, c).view(), out.view()));
    }
    // Smooth content stretched to the full range at depth.
    Image in = make_image(PixelFormat::gray8, 97, 64, d);
    fill_smooth(in.view(), 5u + d);
    const Image out = he_frame(in.view());
    CHECK(count_differences(oracle::he_depth(wide_of(in.view(), 0), d), wide_of(out.view(), 0), "smooth") == 0);
    int top = 0;
    for (std::uint16_t v : wide_of(out.view(), 0).pixels) top = v > top ? v : top;
    CHECK(top == max_code_of(d));
  }
}

TEST_CASE("he at depth: the ROI histogram drives the LUT of the whole frame") {
  for (int d : kDepths) {
    CAPTURE(d);
    Image in = make_image(PixelFormat::gray8, 40, 30, d);
    fill_random(in.view(), 99u + d, 0, max_code_of(d));
    HeParams params;
    params.roi = Roi{5, 4, 17, 11};
    const Image out = he_frame(in.view(), params);
    const Wide src = wide_of(in.view(), 0);
    const std::vector<int> lut = oracle::he_lut(oracle::histogram_depth(src, d, 5, 4, 22, 15), max_code_of(d));
    Wide expected = src;
    for (std::uint16_t& p : expected.pixels) p = static_cast<std::uint16_t>(lut[p]);
    CHECK(count_differences(expected, wide_of(out.view(), 0), "roi") == 0);
  }
}

TEST_CASE("he at depth: he_temporal follows the float recurrence over frames") {
  for (int d : kDepths) {
    CAPTURE(d);
    const int w = 33, h = 21;
    std::vector<Image> frames;
    std::vector<Wide> planes;
    for (int i = 0; i < 4; ++i) {
      frames.push_back(make_image(PixelFormat::gray8, w, h, d));
      if (i == 2) fill_random(frames.back().view(), 7u * i + d, 0, max_code_of(d));
      else fill_smooth(frames.back().view(), 100u + i);
      planes.push_back(wide_of(frames.back().view(), 0));
    }
    HeParams params;
    params.temporal = 0.3f;
    params.roi = Roi{2, 1, 25, 17};
    const std::vector<Wide> expected = oracle::he_temporal_depth(planes, d, 0.3f, 2, 1, 27, 18);
    cpu::HistogramEqualizer he(params, ColorMode::luma, 2);
    for (int i = 0; i < 4; ++i) {
      Image out(PixelFormat::gray8, w, h, 32, d);
      he.process(frames[static_cast<std::size_t>(i)].view(), out.view());
      CHECK(count_differences(expected[static_cast<std::size_t>(i)], wide_of(out.view(), 0), "temporal") == 0);
      // The history carries 2^d bins.
      CHECK(he.history().channel_history[0].size() == (std::size_t{1} << d));
    }
  }
}

TEST_CASE("he at depth: a job's scan of recorded histograms gives the single run's state") {
  ProcessingConfig config;
  config.mode = Mode::he;
  config.he.temporal = 0.25f;
  config.threads = 2;
  const int d = 10;
  auto single = make_cpu_processor(config);
  auto analysis = make_cpu_processor(config);
  TemporalState scanned;
  std::vector<Image> frames;
  for (int i = 0; i < 5; ++i) {
    frames.push_back(make_image(PixelFormat::yuv420p, 45, 29, d, ColorRange::limited));
    fill_smooth(frames.back().view(), 300u + 3 * i);
  }
  for (int i = 0; i < 4; ++i) {
    const FrameEstimate e = analysis->estimate(frames[static_cast<std::size_t>(i)].view());
    REQUIRE(e.channel_histograms[0].size() == 1024);
    advance_temporal_state(config, e, scanned);
    Image out(PixelFormat::yuv420p, 45, 29, 32, d);
    single->process(frames[static_cast<std::size_t>(i)].view(), out.view());
  }
  CHECK(scanned.channel_history[0] == single->temporal_state().channel_history[0]);
  // A chunk starting at frame 4 from the scanned state renders frame 4 as the single run does.
  auto chunk = make_cpu_processor(config);
  chunk->set_temporal_state(scanned);
  Image a(PixelFormat::yuv420p, 45, 29, 32, d), b(PixelFormat::yuv420p, 45, 29, 32, d);
  single->process(frames[4].view(), a.view());
  chunk->process(frames[4].view(), b.view());
  CHECK(same_planes(a.view(), b.view()));
  // A history of another depth is refused with the reason.
  TemporalState eight_bit;
  eight_bit.channel_history[0].assign(256, 1.f);
  auto wrong = make_cpu_processor(config);
  wrong->set_temporal_state(eight_bit);
  CHECK_THROWS_WITH_AS(wrong->process(frames[0].view(), b.view()),
                       "he: the he_temporal history has 256 bins; this 10-bit frame needs 1024",
                       std::invalid_argument);
}

TEST_CASE("he at depth: YUV luma (limited-range mapping at depth), grey, and P010") {
  for (int d : kDepths) {
    for (PixelFormat f : {PixelFormat::yuv420p, PixelFormat::yuv422p, PixelFormat::yuv444p, PixelFormat::nv12}) {
      for (ColorRange range : {ColorRange::limited, ColorRange::full}) {
        CAPTURE(d);
        CAPTURE(to_string(f));
        CAPTURE(static_cast<int>(range));
        Image in = make_image(f, 37, 23, d, range);
        fill_smooth(in.view(), 17u * d);
        const Image out = he_frame(in.view(), HeParams{}, ColorMode::luma);
        Wide expected = oracle::he_depth(wide_of(in.view(), 0), d);
        if (range == ColorRange::limited) expected = mapped(expected, d);
        CHECK(count_differences(expected, wide_of(out.view(), 0), "luma") == 0);
        for (int i = 1; i < in.view().plane_count; ++i)
          for (int c = 0; c < channels_of(in.view(), i); ++c)
            CHECK(count_differences(wide_of(in.view(), i, c), wide_of(out.view(), i, c), "chroma kept") == 0);
        const Image grey = he_frame(in.view(), HeParams{}, ColorMode::grey);
        CHECK(count_differences(expected, wide_of(grey.view(), 0), "grey luma") == 0);
        for (int i = 1; i < in.view().plane_count; ++i)
          for (int c = 0; c < channels_of(in.view(), i); ++c)
            for (std::uint16_t v : wide_of(grey.view(), i, c).pixels) REQUIRE(v == (1 << (d - 1)));
      }
    }
  }
}

TEST_CASE("he at depth: P010 keeps the value in the high bits") {
  Image in = make_image(PixelFormat::nv12, 20, 10, 10, ColorRange::full);
  fill_random(in.view(), 3, 100, 700);
  const Image out = he_frame(in.view());
  for (int y = 0; y < 10; ++y)
    for (int x = 0; x < 20; ++x) CHECK((sample_row(out.view().planes[0], y)[x] & 63) == 0);
}

TEST_CASE("he at depth: rgb48 and YUV rgb mode equalize R, G and B at the frame's depth") {
  // rgb48: the channels as stored, each with its own 65536-bin histogram.
  Image in = make_image(PixelFormat::rgb24, 31, 19, 16);
  fill_random(in.view(), 5, 1000, 40000);
  const Image out = he_frame(in.view(), HeParams{}, ColorMode::rgb);
  for (int c = 0; c < 3; ++c)
    CHECK(count_differences(oracle::he_depth(wide_of(in.view(), 0, c), 16), wide_of(out.view(), 0, c), "rgb48") == 0);
  // rgb48 grey: OpenCV's grey at depth, equalized, replicated.
  const Image grey = he_frame(in.view(), HeParams{}, ColorMode::grey);
  Wide g = wide_of(in.view(), 0, 0);
  for (int y = 0; y < g.height; ++y)
    for (int x = 0; x < g.width; ++x) {
      const std::uint16_t* p = sample_row(in.view().planes[0], y) + 3 * x;
      g.pixels[static_cast<std::size_t>(y) * g.width + x] =
          static_cast<std::uint16_t>((p[0] * 9798LL + p[1] * 19235LL + p[2] * 3735LL + 16384) >> 15);
    }
  const Wide eq = oracle::he_depth(g, 16);
  for (int c = 0; c < 3; ++c) CHECK(count_differences(eq, wide_of(grey.view(), 0, c), "rgb48 grey") == 0);

  // YUV at depth: R, G, B of the fixed-point rule at depth, each equalized, converted back.
  for (int d : kDepths) {
    CAPTURE(d);
    Image yuv = make_image(PixelFormat::yuv444p, 29, 17, d, ColorRange::limited);
    fill_smooth(yuv.view(), 41u + d);
    const Image res = he_frame(yuv.view(), HeParams{}, ColorMode::rgb);
    const color::YuvToRgbDepthI to_rgb = color::yuv_to_rgb_depth_i(ColorMatrix::bt709, ColorRange::limited, d);
    const color::RgbToYuvDepthI to_yuv = color::rgb_to_yuv_depth_i(ColorMatrix::bt709, ColorRange::limited, d);
    Wide ch[3] = {wide_of(yuv.view(), 0), wide_of(yuv.view(), 0), wide_of(yuv.view(), 0)};
    const Wide y0 = wide_of(yuv.view(), 0), u0 = wide_of(yuv.view(), 1), v0 = wide_of(yuv.view(), 2);
    for (std::size_t i = 0; i < y0.pixels.size(); ++i) {
      const color::RgbCodes c = color::yuv_to_rgb_depth(to_rgb, y0.pixels[i], u0.pixels[i], v0.pixels[i]);
      ch[0].pixels[i] = static_cast<std::uint16_t>(c.r);
      ch[1].pixels[i] = static_cast<std::uint16_t>(c.g);
      ch[2].pixels[i] = static_cast<std::uint16_t>(c.b);
    }
    for (Wide& c : ch) c = oracle::he_depth(c, d);
    Wide ey = y0, eu = u0, ev = v0;
    for (std::size_t i = 0; i < y0.pixels.size(); ++i) {
      const int r = ch[0].pixels[i], gg = ch[1].pixels[i], b = ch[2].pixels[i];
      ey.pixels[i] = static_cast<std::uint16_t>(color::rgb_to_luma_depth(to_yuv, r, gg, b));
      const color::ChromaCodes uv = color::rgb_sums_to_chroma_depth(to_yuv, r, gg, b, 1);
      eu.pixels[i] = static_cast<std::uint16_t>(uv.u);
      ev.pixels[i] = static_cast<std::uint16_t>(uv.v);
    }
    CHECK(count_differences(ey, wide_of(res.view(), 0), "rgb Y") == 0);
    CHECK(count_differences(eu, wide_of(res.view(), 1), "rgb U") == 0);
    CHECK(count_differences(ev, wide_of(res.view(), 2), "rgb V") == 0);
  }
}

TEST_CASE("colour at depth: fixed-point rules keep greys grey and white white, and round trip") {
  for (int d = 9; d <= 16; ++d)
    for (ColorRange range : {ColorRange::limited, ColorRange::full})
      for (ColorMatrix m : {ColorMatrix::bt601, ColorMatrix::bt709, ColorMatrix::bt2020}) {
        CAPTURE(d);
        const color::RgbToYuvDepthI to_yuv = color::rgb_to_yuv_depth_i(m, range, d);
        const color::YuvToRgbDepthI to_rgb = color::yuv_to_rgb_depth_i(m, range, d);
        const int max = (1 << d) - 1;
        const int top = range == ColorRange::limited ? (235 << (d - 8)) : max;
        const int bottom = range == ColorRange::limited ? (16 << (d - 8)) : 0;
        CHECK(color::rgb_to_luma_depth(to_yuv, max, max, max) == top);
        CHECK(color::rgb_to_luma_depth(to_yuv, 0, 0, 0) == bottom);
        for (int grey : {0, 1, max / 3, max / 2, max}) {
          const color::ChromaCodes c = color::rgb_sums_to_chroma_depth(to_yuv, 4LL * grey, 4LL * grey, 4LL * grey, 4);
          CHECK(c.u == (1 << (d - 1)));
          CHECK(c.v == (1 << (d - 1)));
        }
        // RGB -> YUV -> RGB within a code or two of depth d (both directions round once).
        std::mt19937 rng(static_cast<std::uint32_t>(d));
        int worst = 0;
        for (int i = 0; i < 2000; ++i) {
          const int r = static_cast<int>(rng() % (max + 1)), g = static_cast<int>(rng() % (max + 1)),
                    b = static_cast<int>(rng() % (max + 1));
          const int y = color::rgb_to_luma_depth(to_yuv, r, g, b);
          const color::ChromaCodes c = color::rgb_sums_to_chroma_depth(to_yuv, r, g, b, 1);
          const color::RgbCodes back = color::yuv_to_rgb_depth(to_rgb, y, c.u, c.v);
          // Colours outside the YUV gamut's rounding clamp; compare unclamped ones only.
          if (back.r == 0 || back.g == 0 || back.b == 0 || back.r == max || back.g == max || back.b == max) continue;
          worst = std::max({worst, std::abs(back.r - r), std::abs(back.g - g), std::abs(back.b - b)});
        }
        CHECK(worst <= (range == ColorRange::limited ? 3 : 2));
      }
}

TEST_CASE("ahe at depth: grey 10, 12 and 16 bits equal the SPEC 7 rule, windows and clips") {
  struct Case {
    int w, h, window;
    float clip;
  };
  const Case cases[] = {{23, 17, 3, 0.f},  {23, 17, 7, 0.f},   {23, 17, 7, 2.f},
                        {40, 31, 15, 0.f}, {40, 31, 15, 1.5f}, {40, 31, 15, 40.f},
                        {40, 31, 31, 4.f}, {9, 6, 31, 0.f},    {9, 6, 31, 3.f}};  // last two: reduced
  for (int d : kDepths)
    for (const Case& c : cases)
      for (bool smooth : {false, true}) {
        CAPTURE(d);
        CAPTURE(c.window);
        CAPTURE(c.clip);
        CAPTURE(c.w);
        CAPTURE(smooth);
        Image in = make_image(PixelFormat::gray8, c.w, c.h, d);
        if (smooth) fill_smooth(in.view(), 3u * d + c.window);
        else fill_random(in.view(), 7u * d + c.window, max_code_of(d) / 7, max_code_of(d) / 2);
        const Image out = ahe_frame(in.view(), c.window, c.clip);
        const Wide expected = oracle::ahe_depth(wide_of(in.view(), 0), d, c.window, c.clip);
        CHECK(count_differences(expected, wide_of(out.view(), 0), "ahe grey") == 0);
      }
}

TEST_CASE("ahe at depth: windows counted directly, one to three vectors a row, at the borders") {
  // Windows of 15, 17, 33 and 47 rows fill one vector of 16 bins, spill one bin into a second,
  // into a third, and fill three but one; frames 48 and 60 samples across reflect most of them.
  for (int d : {12, 16})
    for (int window : {15, 17, 33, 47})
      for (int width : {48, 60}) {
        CAPTURE(d);
        CAPTURE(window);
        CAPTURE(width);
        Image in = make_image(PixelFormat::gray8, width, 50, d);
        fill_random(in.view(), 17u * d + window + width, 0, max_code_of(d));
        const Image out = ahe_frame(in.view(), window, 0.f);
        CHECK(count_differences(oracle::ahe_depth(wide_of(in.view(), 0), d, window, 0.f), wide_of(out.view(), 0),
                                "ahe direct") == 0);
      }
}

TEST_CASE("clahe at depth: windows moved by samples (up to 127 rows) at the borders") {
  // Windows of 33, 63, 95 and 127 rows on a frame 64 rows tall, so most of each window is
  // reflected; smooth content repeats bins, so that the clip limits bite (L = 1 to 31 here).
  for (int d : {12, 16})
    for (int window : {33, 63, 95, 127})
      for (float clip : {1.f, 8.f}) {
        if (d == 16 && window > 63) continue;  // the naive rule's cost grows as the window's area
        CAPTURE(d);
        CAPTURE(window);
        CAPTURE(clip);
        Image in = make_image(PixelFormat::gray8, 70, 64, d);
        fill_smooth(in.view(), 5u * d + window);
        const Image out = ahe_frame(in.view(), window, clip);
        CHECK(count_differences(oracle::ahe_depth(wide_of(in.view(), 0), d, window, clip), wide_of(out.view(), 0),
                                "clahe samples") == 0);
      }
}

TEST_CASE("ahe at depth: values over the whole range (every 4096-bin bucket) and a tall frame") {
  for (int d : {12, 16}) {
    CAPTURE(d);
    Image in = make_image(PixelFormat::gray8, 35, 70, d);
    fill_random(in.view(), 1234u + d, 0, max_code_of(d));
    for (float clip : {0.f, 2.5f}) {
      const Image out = ahe_frame(in.view(), 21, clip, ColorMode::luma, 3);
      CHECK(count_differences(oracle::ahe_depth(wide_of(in.view(), 0), d, 21, clip),
                              wide_of(out.view(), 0), "ahe full range") == 0);
    }
  }
}

TEST_CASE("ahe at depth: frames one to three samples wide or tall equal the rule") {
  const int sizes[][2] = {{1, 9}, {2, 7}, {3, 3}, {9, 1}, {6, 2}, {2, 2}, {1, 1}};
  for (int d : kDepths)
    for (const auto& size : sizes)
      for (int window : {3, 7})
        for (float clip : {0.f, 2.f}) {
          CAPTURE(d);
          CAPTURE(size[0]);
          CAPTURE(size[1]);
          CAPTURE(window);
          CAPTURE(clip);
          Image in = make_image(PixelFormat::gray8, size[0], size[1], d);
          fill_random(in.view(), 31u * d + size[0] + 5u * size[1], 0, max_code_of(d));
          const Image out = ahe_frame(in.view(), window, clip);
          CHECK(count_differences(oracle::ahe_depth(wide_of(in.view(), 0), d, window, clip),
                                  wide_of(out.view(), 0), "ahe thin") == 0);
        }
}

TEST_CASE("ahe at depth: a window of more than 65535 pixels (32-bit counters, column superblocks)") {
  Image in = make_image(PixelFormat::gray8, 131, 129, 12);
  fill_random(in.view(), 4321u, max_code_of(12) / 7, max_code_of(12) / 2);
  for (float clip : {0.f, 2.f}) {
    CAPTURE(clip);
    const Image out = ahe_frame(in.view(), 257, clip);
    CHECK(count_differences(oracle::ahe_depth(wide_of(in.view(), 0), 12, 257, clip),
                            wide_of(out.view(), 0), "ahe 257") == 0);
  }
}

TEST_CASE("ahe at depth: nearly flat frames whose column counts fill 8-bit counters") {
  // Most columns count the window's rows in one bin; a few outliers move in and out. A window of
  // 31 rows is counted directly (every lane of a vector in one bin), 63 rows keep their column
  // lines in 8-bit counters summed over blocks of 4 columns (252 at a block's end), 65 rows is
  // the first window with 16-bit lines, and 255 rows the longest with 16-bit window counters
  // (n = 65025).
  const int d = 12;
  Image in = make_image(PixelFormat::gray8, 140, 129, d);
  fill_random(in.view(), 99u, 300, 300);
  const int shift = sample_shift(in.view());
  for (int i = 0; i < 40; ++i)
    sample_row(in.view().planes[0], (i * 53) % 129)[(i * 37) % 140] = static_cast<std::uint16_t>((268 + 16 * (i % 5)) << shift);
  const Wide bits = wide_of(in.view(), 0);
  for (int window : {31, 63, 65, 255}) {
    for (float clip : {0.f, 2.f}) {
      CAPTURE(window);
      CAPTURE(clip);
      const Image out = ahe_frame(in.view(), window, clip);
      CHECK(count_differences(oracle::ahe_depth(bits, d, window, clip), wide_of(out.view(), 0), "ahe flat") == 0);
    }
  }
}

// HAZEFREE_CPU_ISA set for the life of the object (the kernels read it at each frame).
struct CpuIsaCap {
  explicit CpuIsaCap(const char* isa) { setenv("HAZEFREE_CPU_ISA", isa, 1); }
  ~CpuIsaCap() { unsetenv("HAZEFREE_CPU_ISA"); }
  CpuIsaCap(const CpuIsaCap&) = delete;
  CpuIsaCap& operator=(const CpuIsaCap&) = delete;
};

TEST_CASE("ahe at every instruction set: each compiled copy gives the rule's bits (HAZEFREE_CPU_ISA)") {
  // Each design under each cap: AHE counted directly (15 and 47 rows), column histograms with
  // 8-bit lines (63) and 16-bit ones (65), CLAHE moved by samples (33, 127) and in buckets (129);
  // and the 8-bit AHE / CLAHE. A CPU without AVX2 runs the baseline copy under both caps.
  const std::string caps[] = {"baseline", "avx2"};
  const int d = 12;
  Image in = make_image(PixelFormat::gray8, 150, 70, d);
  fill_smooth(in.view(), 77u);
  const Wide bits = wide_of(in.view(), 0);
  const struct {
    int window;
    float clip;
  } cases[] = {{15, 0.f}, {47, 0.f}, {63, 0.f}, {65, 0.f}, {33, 2.f}, {127, 2.f}, {129, 2.f}};
  for (const auto& c : cases) {
    const Wide expected = oracle::ahe_depth(bits, d, c.window, c.clip);
    for (const std::string& isa : caps) {
      CAPTURE(c.window);
      CAPTURE(c.clip);
      CAPTURE(isa);
      const CpuIsaCap cap(isa.c_str());
      CHECK(count_differences(expected, wide_of(ahe_frame(in.view(), c.window, c.clip).view(), 0), "ahe capped") == 0);
    }
  }

  const Image in8 = test::smooth_frame(PixelFormat::gray8, 150, 70, 5u);
  for (float clip : {0.f, 2.f}) {
    const oracle::Grey expected = oracle::ahe(test::channel_of(in8.view(), 0), 31, clip);
    for (const std::string& isa : caps) {
      CAPTURE(clip);
      CAPTURE(isa);
      const CpuIsaCap cap(isa.c_str());
      CHECK(test::count_differences(expected, test::channel_of(ahe_frame(in8.view(), 31, clip).view(), 0),
                                    "ahe 8-bit capped") == 0);
    }
  }
}

TEST_CASE("ahe at every instruction set: an unknown HAZEFREE_CPU_ISA is refused with one line") {
  Image in = make_image(PixelFormat::gray8, 40, 30, 12);
  fill_smooth(in.view(), 3u);
  const CpuIsaCap cap("sse9");
  CHECK_THROWS_WITH_AS(ahe_frame(in.view(), 15, 0.f), "HAZEFREE_CPU_ISA: 'sse9' is not baseline or avx2",
                       std::invalid_argument);
}

TEST_CASE("ahe at depth: YUV luma with the limited-range mapping, P010, and rgb mode") {
  for (PixelFormat f : {PixelFormat::yuv420p, PixelFormat::nv12}) {
    for (float clip : {0.f, 2.f}) {
      CAPTURE(to_string(f));
      CAPTURE(clip);
      Image in = make_image(f, 41, 27, 10, ColorRange::limited);
      fill_smooth(in.view(), 77);
      const Image out = ahe_frame(in.view(), 9, clip, ColorMode::luma);
      const Wide expected = mapped(oracle::ahe_depth(wide_of(in.view(), 0), 10, 9, clip), 10);
      CHECK(count_differences(expected, wide_of(out.view(), 0), "ahe luma") == 0);
      for (int i = 1; i < in.view().plane_count; ++i)
        for (int c = 0; c < channels_of(in.view(), i); ++c)
          CHECK(count_differences(wide_of(in.view(), i, c), wide_of(out.view(), i, c), "chroma kept") == 0);
    }
  }
  // rgb48 rgb: each channel on its own.
  Image in = make_image(PixelFormat::rgb24, 26, 18, 16);
  fill_random(in.view(), 8, 0, 65535);
  const Image out = ahe_frame(in.view(), 11, 1.f, ColorMode::rgb);
  for (int c = 0; c < 3; ++c)
    CHECK(count_differences(oracle::ahe_depth(wide_of(in.view(), 0, c), 16, 11, 1.f),
                            wide_of(out.view(), 0, c), "ahe rgb48") == 0);
}

TEST_CASE("equalize at depth: one thread (sequential) equals OpenMP, frame after frame") {
  for (int d : {10, 12, 16}) {
    CAPTURE(d);
    Image in = make_image(PixelFormat::yuv420p, 67, 45, d, ColorRange::limited);
    fill_smooth(in.view(), 900u + d);
    for (ColorMode color : {ColorMode::luma, ColorMode::rgb}) {
      CHECK(same_planes(he_frame(in.view(), HeParams{}, color, 1).view(),
                        he_frame(in.view(), HeParams{}, color, 3).view()));
      for (float clip : {0.f, 3.f}) {
        const Image one = ahe_frame(in.view(), 15, clip, color, 1);
        CHECK(same_planes(one.view(), ahe_frame(in.view(), 15, clip, color, 2).view()));
        CHECK(same_planes(one.view(), ahe_frame(in.view(), 15, clip, color, 5).view()));
      }
    }
  }
  // One equalizer across depths and sizes gives the fresh result each time.
  AheParams params;
  params.window = 9;
  params.clip = 2.f;
  cpu::AdaptiveEqualizer ahe(params, ColorMode::luma, 2);
  for (int d : {8, 12, 10, 16, 8}) {
    CAPTURE(d);
    Image in = make_image(PixelFormat::gray8, 20 + d, 15, d);
    fill_random(in.view(), 31u * d, 0, max_code_of(d));
    Image out(PixelFormat::gray8, 20 + d, 15, 32, d);
    ahe.process(in.view(), out.view());
    CHECK(same_planes(out.view(), ahe_frame(in.view(), 9, 2.f).view()));
  }
}

TEST_CASE("equalize at depth: rgb-bits is refused with one line, and depths must match") {
  Image in = make_image(PixelFormat::yuv420p, 16, 8, 10, ColorRange::limited);
  fill_random(in.view(), 1, 64, 940);
  Image out(PixelFormat::yuv420p, 16, 8, 32, 10);
  cpu::HistogramEqualizer bits(HeParams{}, ColorMode::rgb_bits, 1);
  CHECK_THROWS_WITH_AS(bits.process(in.view(), out.view()),
                       "color = rgb-bits works on 8-bit frames only; this frame is 10-bit (yuv420p10)",
                       std::invalid_argument);
  Image eight(PixelFormat::yuv420p, 16, 8, 32, 8);
  cpu::HistogramEqualizer he(HeParams{}, ColorMode::luma, 1);
  CHECK_THROWS_WITH_AS(he.process(in.view(), eight.view()),
                       "equalize: output yuv420p differs from input yuv420p10 in depth",
                       std::invalid_argument);
}

}  // namespace hazefree
