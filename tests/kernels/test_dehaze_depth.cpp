// The dark channel prior chain at 10, 12 and 16 bits (SPEC 7) on the CPU: a 16-bit RGB photo and
// a synthetic 16-bit picture within one code at 10-bit precision of the double reference, a
// yuv420p10 picture within one code of it, the atmospheric light over frames at depth, an 8-bit
// picture promoted to 10 bits dehazing to four times the 8-bit codes, P010 nv12 equal to
// yuv420p10, thread independence, and refused frames.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/image.hpp"
#include "support/sample_access.hpp"
#include "kernels/dehaze.hpp"
#include "oracles/color_oracle.hpp"
#include "oracles/dehaze_oracle.hpp"
#include "support/dcp_test_support.hpp"

using namespace hazefree;

namespace {

using RgbD = std::array<oracle::Grid<double>, 3>;

using samples::row_samples;
using samples::sample;
using samples::set_sample;

bool identical(const ImageView& a, const ImageView& b) {
  for (int p = 0; p < a.plane_count; ++p)
    for (int y = 0; y < a.planes[p].height; ++y)
      for (int i = 0; i < row_samples(a, p); ++i)
        if (sample(a, p, i, y) != sample(b, p, i, y)) return false;
  return true;
}

RgbD rgb_grids(int w, int h) {
  return {oracle::Grid<double>(w, h), oracle::Grid<double>(w, h), oracle::Grid<double>(w, h)};
}

// A clean scene in [0,1]: smooth colours with dark shadows (the prior needs them) and a bright
// patch, slowly moving with `phase`.
RgbD synthetic_scene(int w, int h, double phase) {
  RgbD j = rgb_grids(w, h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const double u = static_cast<double>(x) / w, v = static_cast<double>(y) / h;
      const double shade = 0.5 + 0.45 * std::sin(9.0 * u + phase) * std::cos(7.0 * v);
      j[0].at(x, y) = std::clamp(0.1 + 0.8 * shade * (0.6 + 0.4 * u), 0.0, 1.0);
      j[1].at(x, y) = std::clamp(0.05 + 0.7 * shade * (1.0 - 0.5 * v), 0.0, 1.0);
      j[2].at(x, y) = std::clamp(0.02 + 0.6 * shade * shade, 0.0, 1.0);
      const double dx = u - 0.7, dy = v - 0.3;
      if (dx * dx + dy * dy < 0.01)
        for (int c = 0; c < 3; ++c) j[c].at(x, y) = 0.9 + 0.05 * c;
    }
  return j;
}

RgbD photo_scene(const test::Rgb8& img) {
  RgbD j = rgb_grids(img.w, img.h);
  for (int y = 0; y < img.h; ++y)
    for (int x = 0; x < img.w; ++x)
      for (int c = 0; c < 3; ++c) j[c].at(x, y) = img.at(x, y)[c] / 255.0;
  return j;
}

// Haze model I = J t + A (1 - t), t from 0.85 at the bottom row to 0.25 at the top; in double,
// so a photo of 8-bit codes becomes a picture of genuinely 16-bit values.
RgbD add_haze(const RgbD& clean, const std::array<double, 3>& a) {
  RgbD out = clean;
  const int h = clean[0].h;
  for (int y = 0; y < h; ++y) {
    const double t = 0.25 + 0.6 * y / std::max(1, h - 1);
    for (int x = 0; x < clean[0].w; ++x)
      for (int c = 0; c < 3; ++c) out[c].at(x, y) = clean[c].at(x, y) * t + a[c] * (1 - t);
  }
  return out;
}

// RGB at depth: the rounded codes into an rgb24 frame of that depth, and what they hold in
// [0,1] (codes / M, exact in double) for the reference.
Image rgb_frame(const RgbD& rgb, int depth, RgbD* quantised) {
  const int w = rgb[0].w, h = rgb[0].h;
  const double m = max_code(depth);
  Image f(PixelFormat::rgb24, w, h, 64, depth);
  *quantised = rgb_grids(w, h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) {
        const int code = static_cast<int>(std::lround(std::clamp(rgb[c].at(x, y), 0.0, 1.0) * m));
        set_sample(f.view(), 0, 3 * x + c, y, code);
        (*quantised)[c].at(x, y) = code / m;
      }
  return f;
}

// The largest difference between the product's 16-bit RGB output and the reference's J', in
// codes at 10-bit precision (1 = 1/1023).
double rgb_difference_at_10_bits(const ImageView& out, const RgbD& j) {
  const double m = max_code(out.depth);
  double worst = 0.0;
  for (int y = 0; y < out.height; ++y)
    for (int x = 0; x < out.width; ++x)
      for (int c = 0; c < 3; ++c)
        worst = std::max(worst, std::fabs(sample(out, 0, 3 * x + c, y) / m - j[c].at(x, y)));
  return worst * 1023.0;
}

void check_light(const std::array<float, 3>& got, const std::array<double, 3>& expected) {
  for (int c = 0; c < 3; ++c) CHECK(std::fabs(got[c] - expected[c]) <= 1e-6);
}

ImageView with_colour(ImageView v, ColorMatrix m, ColorRange r) {
  v.matrix = m;
  v.range = r;
  return v;
}

}  // namespace

TEST_CASE("dehaze at depth: 16-bit RGB photo within one 10-bit code of the double reference") {
  const test::Rgb8 photo = test::load_sample_rgb("coffee.png");
  REQUIRE_MESSAGE(photo.w > 0, "samples/images/coffee.png is missing");
  struct Case {
    RgbD clean;
    int gf_radius, subsample;
  };
  const Case cases[] = {{photo_scene(test::crop(photo, 37, 51, 161, 97)), 32, 1},
                        {photo_scene(test::crop(photo, 0, 0, 200, 130)), 16, 4},
                        {synthetic_scene(143, 89, 0.3), 32, 1},
                        {synthetic_scene(67, 45, 1.1), 8, 3}};
  for (const Case& k : cases) {
    DcpParams p;
    p.gf_radius = k.gf_radius;
    p.gf_subsample = k.subsample;
    RgbD input;
    Image in = rgb_frame(add_haze(k.clean, {0.85, 0.87, 0.9}), 16, &input);
    Image out(PixelFormat::rgb24, in.view().width, in.view().height, 64, 16);
    cpu::Dehazer dehazer(p, 2);
    dehazer.process(in.view(), out.view());
    const oracle::ChainResult ref =
        oracle::dehaze_double(input, test::oracle_params(p), p.a_top_fraction);
    check_light(dehazer.atmospheric_light(), ref.a);
    const double worst = rgb_difference_at_10_bits(out.view(), ref.j);
    INFO(in.view().width << "x" << in.view().height << " gf " << k.gf_radius << "/" << k.subsample);
    MESSAGE("rgb48 " << in.view().width << "x" << in.view().height << ": worst difference " << worst
                     << " codes at 10 bits");
    CHECK(worst <= 1.0);
  }
}

TEST_CASE("dehaze at depth: yuv420p10 within one code of the double reference") {
  const int w = 121, h = 83, depth = 10;
  for (const ColorRange range : {ColorRange::limited, ColorRange::full}) {
    const bool limited = range == ColorRange::limited;
    const RgbD hazy = add_haze(synthetic_scene(w, h, 0.7), {0.8, 0.84, 0.88});
    // The frame: luma per pixel, chroma from the mean colour of each 2x2 block (double, rounded).
    Image in(PixelFormat::yuv420p, w, h, 64, depth);
    const ImageView v = with_colour(in.view(), ColorMatrix::bt709, range);
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        const auto ycc =
            oracle::rgb_to_ycbcr_at(hazy[0].at(x, y), hazy[1].at(x, y), hazy[2].at(x, y),
                                    oracle::Matrix::bt709, limited, depth);
        set_sample(v, 0, x, y, static_cast<int>(std::lround(ycc[0])));
      }
    auto block_mean = [&](const RgbD& rgb, int cx, int cy) {
      std::array<double, 3> m{};
      int n = 0;
      for (int y = 2 * cy; y < std::min(h, 2 * cy + 2); ++y)
        for (int x = 2 * cx; x < std::min(w, 2 * cx + 2); ++x, ++n)
          for (int c = 0; c < 3; ++c) m[c] += rgb[c].at(x, y);
      for (double& c : m) c /= n;
      return m;
    };
    const int cw = v.planes[1].width, ch = v.planes[1].height;
    for (int cy = 0; cy < ch; ++cy)
      for (int cx = 0; cx < cw; ++cx) {
        const auto m = block_mean(hazy, cx, cy);
        const auto ycc =
            oracle::rgb_to_ycbcr_at(m[0], m[1], m[2], oracle::Matrix::bt709, limited, depth);
        set_sample(v, 1, cx, cy, static_cast<int>(std::lround(ycc[1])));
        set_sample(v, 2, cx, cy, static_cast<int>(std::lround(ycc[2])));
      }
    // The reference decodes those codes in double, dehazes in double and encodes in double.
    RgbD decoded = rgb_grids(w, h);
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        const auto rgb = oracle::ycbcr_to_rgb_at(sample(v, 0, x, y), sample(v, 1, x / 2, y / 2),
                                                 sample(v, 2, x / 2, y / 2), oracle::Matrix::bt709,
                                                 limited, depth);
        for (int c = 0; c < 3; ++c) decoded[c].at(x, y) = std::clamp(rgb[c], 0.0, 1.0);
      }
    DcpParams p;
    const oracle::ChainResult ref =
        oracle::dehaze_double(decoded, test::oracle_params(p), p.a_top_fraction);
    Image out(PixelFormat::yuv420p, w, h, 64, depth);
    cpu::Dehazer dehazer(p, 2);
    dehazer.process(v, out.view());
    const ImageView o = out.view();
    check_light(dehazer.atmospheric_light(), ref.a);
    int worst = 0;
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        const auto ycc =
            oracle::rgb_to_ycbcr_at(ref.j[0].at(x, y), ref.j[1].at(x, y), ref.j[2].at(x, y),
                                    oracle::Matrix::bt709, limited, depth);
        worst = std::max(worst,
                         std::abs(sample(o, 0, x, y) - static_cast<int>(std::floor(ycc[0] + 0.5))));
      }
    for (int cy = 0; cy < ch; ++cy)
      for (int cx = 0; cx < cw; ++cx) {
        const auto m = block_mean(ref.j, cx, cy);
        const auto ycc =
            oracle::rgb_to_ycbcr_at(m[0], m[1], m[2], oracle::Matrix::bt709, limited, depth);
        for (int c = 1; c < 3; ++c)
          worst = std::max(
              worst, std::abs(sample(o, c, cx, cy) - static_cast<int>(std::floor(ycc[c] + 0.5))));
      }
    INFO("range " << int(range));
    MESSAGE("yuv420p10 " << std::string(limited ? "limited" : "full")
                         << " range: worst code difference " << worst);
    CHECK(worst <= 1);
  }
}

TEST_CASE("dehaze at depth: the atmospheric light over frames, drift, a cut and reset") {
  DcpParams p;
  const int w = 150, h = 100;
  for (const int depth : {12, 16}) {
    cpu::Dehazer dehazer(p, 2);
    // The inter-frame constraint in double from the reference estimates (SPEC 3 step 4).
    std::array<double, 3> light{};
    bool has_light = false;
    for (int frame = 0; frame < 7; ++frame) {
      if (frame == 5) {
        dehazer.reset();
        has_light = false;
      }
      // Frames 0-2 drift slowly, frame 3 is a cut (other haze and scene), then the first haze.
      const std::array<double, 3> a =
          frame == 3 ? std::array<double, 3>{0.2, 0.25, 0.3}
                     : std::array<double, 3>{0.8 + 0.01 * frame, 0.84, 0.88 - 0.01 * frame};
      RgbD input;
      Image in = rgb_frame(add_haze(synthetic_scene(w, h, frame == 3 ? 2.5 : 0.1 * frame), a),
                           depth, &input);
      Image out(PixelFormat::rgb24, w, h, 64, depth);
      dehazer.process(in.view(), out.view());
      const std::array<double, 3> estimate =
          oracle::atmosphere_double(input, p.patch_radius, p.a_top_fraction);
      INFO("depth " << depth << " frame " << frame);
      check_light(dehazer.atmospheric_estimate(), estimate);
      double change = 0.0;
      for (int c = 0; c < 3; ++c) change += std::fabs(estimate[c] - light[c]) / 3.0;
      const bool cut = !has_light || change > p.a_scene_cut;
      for (int c = 0; c < 3; ++c)
        light[c] = cut ? estimate[c]
                       : light[c] + std::clamp(p.a_smoothing * (estimate[c] - light[c]),
                                               -double(p.a_max_step), double(p.a_max_step));
      has_light = true;
      if (frame == 0 || frame == 3 || frame == 5) CHECK(cut);
      if (frame == 1 || frame == 2 || frame == 6) CHECK(!cut);
      check_light(dehazer.atmospheric_light(), light);
    }
  }
}

TEST_CASE(
    "dehaze at depth: an 8-bit picture promoted to 10 bits gives four times the 8-bit codes") {
  // Limited range: (4 Y - 64) / 876 = (Y - 16) / 219 and the chroma likewise, with float
  // coefficients exactly a quarter of the 8-bit ones, so the float chain sees the same RGB and
  // the 10-bit result is the 8-bit result's unrounded value times four: within half an 8-bit code.
  const int w = 97, h = 61;
  for (const PixelFormat fmt : {PixelFormat::yuv420p, PixelFormat::yuv444p, PixelFormat::gray8}) {
    DcpParams p;
    cpu::Dehazer d8(p, 2), d10(p, 2);
    for (int frame = 0; frame < 3; ++frame) {
      Image in8(fmt, w, h), in10(fmt, w, h, 64, 10);
      const ImageView v8 = with_colour(in8.view(), ColorMatrix::bt601, ColorRange::limited);
      const ImageView v10 = with_colour(in10.view(), ColorMatrix::bt601, ColorRange::limited);
      for (int pl = 0; pl < v8.plane_count; ++pl)
        for (int y = 0; y < v8.planes[pl].height; ++y)
          for (int i = 0; i < row_samples(v8, pl); ++i) {
            const double s = std::sin(0.05 * i + 0.3 * frame) * std::cos(0.07 * y + pl);
            const int code =
                pl == 0 ? 40 + static_cast<int>(90 + 80 * s) : 128 + static_cast<int>(40 * s);
            set_sample(v8, pl, i, y, code);
            set_sample(v10, pl, i, y, code << 2);
          }
      Image out8(fmt, w, h), out10(fmt, w, h, 64, 10);
      d8.process(v8, out8.view());
      d10.process(v10, out10.view());
      INFO(to_string(fmt) << " frame " << frame);
      CHECK(d8.atmospheric_light() == d10.atmospheric_light());
      int worst = 0;
      long long exact = 0, samples = 0;
      for (int pl = 0; pl < v8.plane_count; ++pl)
        for (int y = 0; y < v8.planes[pl].height; ++y)
          for (int i = 0; i < row_samples(v8, pl); ++i) {
            const int a = sample(out8.view(), pl, i, y), b = sample(out10.view(), pl, i, y);
            if (a == 0 || a == 255) continue;  // clipped at 8 bits
            worst = std::max(worst, std::abs(b - 4 * a));
            exact += b == 4 * a;
            ++samples;
          }
      CHECK(samples > 0);
      CHECK(worst <= 2);
      // Not a copy: the extra bits carry the precision 8 bits rounded away.
      CHECK(exact < samples);
    }
  }
}

TEST_CASE("dehaze at depth: P010 nv12 equals yuv420p10, threads do not change the result") {
  DcpParams p;
  p.gf_radius = 12;
  for (const int depth : {10, 12, 16})
    for (auto [w, h] : {std::pair{1, 1}, {3, 2}, {45, 31}}) {
      Image planar(PixelFormat::yuv420p, w, h, 64, depth), nv12(PixelFormat::nv12, w, h, 64, depth);
      const ImageView pv = with_colour(planar.view(), ColorMatrix::bt709, ColorRange::limited);
      const ImageView qv = with_colour(nv12.view(), ColorMatrix::bt709, ColorRange::limited);
      const int s = depth - 8;
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
          const int code = (60 + (x * 7 + y * 3) % 150) << s;
          set_sample(pv, 0, x, y, code);
          set_sample(qv, 0, x, y, code);
        }
      for (int y = 0; y < pv.planes[1].height; ++y)
        for (int x = 0; x < pv.planes[1].width; ++x) {
          const int u = (100 + (x * 5) % 60) << s, v = (110 + (y * 9) % 50) << s;
          set_sample(pv, 1, x, y, u);
          set_sample(pv, 2, x, y, v);
          set_sample(qv, 1, 2 * x, y, u);
          set_sample(qv, 1, 2 * x + 1, y, v);
        }
      Image a(PixelFormat::yuv420p, w, h, 64, depth), b(PixelFormat::yuv420p, w, h, 64, depth);
      Image c(PixelFormat::nv12, w, h, 64, depth);
      cpu::Dehazer(p, 1).process(pv, a.view());
      cpu::Dehazer(p, 0).process(pv, b.view());
      cpu::Dehazer(p, 2).process(qv, c.view());
      INFO(format_name(PixelFormat::nv12, depth) << " " << w << "x" << h);
      CHECK(identical(a.view(), b.view()));
      bool same = true;
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
          same = same && sample(a.view(), 0, x, y) == sample(c.view(), 0, x, y);
      for (int y = 0; y < a.view().planes[1].height; ++y)
        for (int x = 0; x < a.view().planes[1].width; ++x)
          same = same && sample(a.view(), 1, x, y) == sample(c.view(), 1, 2 * x, y) &&
                 sample(a.view(), 2, x, y) == sample(c.view(), 1, 2 * x + 1, y);
      CHECK(same);
    }
  // Every other layout at depth: one thread and all threads give the same frame.
  for (const int depth : {10, 16})
    for (const PixelFormat fmt :
         {PixelFormat::yuv422p, PixelFormat::yuv444p, PixelFormat::gray8, PixelFormat::rgb24}) {
      const int w = 53, h = 38;
      Image in(fmt, w, h, 64, depth);
      for (int pl = 0; pl < in.view().plane_count; ++pl)
        for (int y = 0; y < h; ++y)
          for (int i = 0; i < row_samples(in.view(), pl); ++i)
            set_sample(in.view(), pl, i, y,
                       ((i * 37 + y * 101 + pl * 7) * 613) % (max_code(depth) + 1));
      Image a(fmt, w, h, 64, depth), b(fmt, w, h, 64, depth);
      cpu::Dehazer(p, 1).process(in.view(), a.view());
      cpu::Dehazer(p, 0).process(in.view(), b.view());
      INFO(format_name(fmt, depth));
      CHECK(identical(a.view(), b.view()));
    }
}

TEST_CASE("dehaze at depth: frames of different depths refused") {
  cpu::Dehazer dehazer(DcpParams{}, 1);
  Image in(PixelFormat::yuv420p, 8, 8, 64, 10), out8(PixelFormat::yuv420p, 8, 8),
      out12(PixelFormat::yuv420p, 8, 8, 64, 12);
  CHECK_THROWS_AS(dehazer.process(in.view(), out8.view()), std::invalid_argument);
  CHECK_THROWS_AS(dehazer.process(in.view(), out12.view()), std::invalid_argument);
  ImageView bad = in.view();
  bad.depth = 17;
  ImageView bad_out = in.view();
  bad_out.depth = 17;
  CHECK_THROWS_AS(dehazer.process(bad, bad_out), std::invalid_argument);
}
