// The float colour conversion (the DCP path) at 10, 12 and 16 bits (SPEC 7): encode and decode
// against the double reference at depth, exact anchors (white, black, grey on the chroma zero),
// round trips on every layout and odd sizes, P010/P016 nv12 equal to yuv420p at the same depth,
// thread independence and refused depths.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "common/image.hpp"
#include "support/sample_access.hpp"
#include "kernels/color_convert.hpp"
#include "oracles/color_oracle.hpp"

using namespace hazefree;

namespace {

constexpr PixelFormat kFormats[] = {PixelFormat::yuv420p, PixelFormat::yuv422p,
                                    PixelFormat::yuv444p, PixelFormat::nv12,
                                    PixelFormat::gray8,   PixelFormat::rgb24};
constexpr int kDepths[] = {10, 12, 16};

oracle::Matrix to_oracle(ColorMatrix m) {
  return m == ColorMatrix::bt709
             ? oracle::Matrix::bt709
             : (m == ColorMatrix::bt2020 ? oracle::Matrix::bt2020 : oracle::Matrix::bt601);
}

Image frame(PixelFormat f, int w, int h, int depth, ColorMatrix m, ColorRange r) {
  Image img(f, w, h, 64, depth);
  img.view().matrix = m;
  img.view().range = r;
  return img;
}

using samples::row_samples;
using samples::sample;
using samples::set_sample;

std::uint16_t stored(const ImageView& v, int p, int i, int y) {
  const std::uint8_t* row = v.planes[p].data + static_cast<std::ptrdiff_t>(y) * v.planes[p].stride;
  std::uint16_t raw;
  std::memcpy(&raw, row + 2 * i, 2);
  return raw;
}

int max_code_diff(const ImageView& a, const ImageView& b) {
  int worst = 0;
  for (int p = 0; p < a.plane_count; ++p)
    for (int y = 0; y < a.planes[p].height; ++y)
      for (int i = 0; i < row_samples(a, p); ++i)
        worst = std::max(worst, std::abs(sample(a, p, i, y) - sample(b, p, i, y)));
  return worst;
}

struct RgbFPlanes {
  int w, h;
  std::vector<float> r, g, b;
  RgbFPlanes(int w_, int h_) : w(w_), h(h_), r(w_ * h_), g(w_ * h_), b(w_ * h_) {}
  RgbPlanesF planes() { return {r.data(), g.data(), b.data(), w}; }
};

// Smooth colours well inside the gamut, so that a round trip never clamps.
RgbFPlanes smooth_rgb(int w, int h) {
  RgbFPlanes p(w, h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      p.r[y * w + x] = 0.25f + 0.45f * static_cast<float>((x * 5 + y * 3) % 120) / 120.f;
      p.g[y * w + x] = 0.28f + 0.42f * static_cast<float>((x * 2 + y * 7) % 110) / 110.f;
      p.b[y * w + x] = 0.22f + 0.5f * static_cast<float>((x * 3 + y * 2) % 130) / 130.f;
    }
  return p;
}

}  // namespace

TEST_CASE("colour at depth: float encode against the double reference, exact anchors") {
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> unit(0.f, 1.f);
  std::vector<std::array<float, 3>> colours = {{1, 1, 1}, {0, 0, 0}, {0.5f, 0.5f, 0.5f}, {1, 0, 0},
                                               {0, 1, 0}, {0, 0, 1}, {1, 1, 0},          {0, 1, 1}};
  for (int i = 0; i < 300; ++i) colours.push_back({unit(rng), unit(rng), unit(rng)});
  const int n = static_cast<int>(colours.size());
  for (const int depth : kDepths)
    for (ColorMatrix m : {ColorMatrix::bt601, ColorMatrix::bt709, ColorMatrix::bt2020})
      for (ColorRange range : {ColorRange::limited, ColorRange::full}) {
        const bool limited = range == ColorRange::limited;
        RgbFPlanes in(n, 1);
        for (int i = 0; i < n; ++i) {
          in.r[i] = colours[i][0];
          in.g[i] = colours[i][1];
          in.b[i] = colours[i][2];
        }
        Image f = frame(PixelFormat::yuv444p, n, 1, depth, m, range);
        cpu::rgb_f32_to_frame(in.planes(), f.view(), 1);
        double worst = 0.0;
        for (int i = 0; i < n; ++i) {
          const auto ref =
              oracle::rgb_to_ycbcr_at(in.r[i], in.g[i], in.b[i], to_oracle(m), limited, depth);
          for (int p = 0; p < 3; ++p)
            worst = std::max(worst, std::fabs(sample(f.view(), p, i, 0) - ref[p]));
        }
        INFO("depth " << depth << " matrix " << int(m) << " limited " << limited);
        // Rounded to the nearest code; float's own error stays far below a hundredth of a code.
        CHECK(worst <= 0.5 + 0.02);
        // White, black and grey exactly: the ends of the range and the chroma zero.
        const int s = depth - 8, top = limited ? 235 << s : max_code(depth);
        CHECK(sample(f.view(), 0, 0, 0) == top);
        CHECK(sample(f.view(), 0, 1, 0) == (limited ? 16 << s : 0));
        for (int i = 0; i < 3; ++i) {
          CHECK(sample(f.view(), 1, i, 0) == 128 << s);
          CHECK(sample(f.view(), 2, i, 0) == 128 << s);
        }
      }
}

TEST_CASE("colour at depth: float decode against the double reference") {
  std::mt19937 rng(17);
  for (const int depth : kDepths)
    for (ColorMatrix m : {ColorMatrix::bt601, ColorMatrix::bt709, ColorMatrix::bt2020})
      for (ColorRange range : {ColorRange::limited, ColorRange::full}) {
        const bool limited = range == ColorRange::limited;
        std::uniform_int_distribution<int> code(0, max_code(depth));
        const int n = 400;
        for (const PixelFormat fmt :
             {PixelFormat::yuv444p, PixelFormat::gray8, PixelFormat::rgb24}) {
          Image f = frame(fmt, n, 1, depth, m, range);
          for (int p = 0; p < f.view().plane_count; ++p)
            for (int i = 0; i < row_samples(f.view(), p); ++i)
              set_sample(f.view(), p, i, 0, code(rng));
          RgbFPlanes out(n, 1);
          cpu::frame_to_rgb_f32(f.view(), out.planes(), 1);
          double worst = 0.0;
          for (int i = 0; i < n; ++i) {
            std::array<double, 3> ref;
            if (fmt == PixelFormat::rgb24) {
              for (int c = 0; c < 3; ++c)
                ref[c] = sample(f.view(), 0, 3 * i + c, 0) / double(max_code(depth));
            } else if (fmt == PixelFormat::gray8) {
              const double c0 = std::ldexp(1.0, depth - 1);
              ref = oracle::ycbcr_to_rgb_at(sample(f.view(), 0, i, 0), c0, c0, to_oracle(m),
                                            limited, depth);
            } else {
              ref =
                  oracle::ycbcr_to_rgb_at(sample(f.view(), 0, i, 0), sample(f.view(), 1, i, 0),
                                          sample(f.view(), 2, i, 0), to_oracle(m), limited, depth);
            }
            const float got[3] = {out.r[i], out.g[i], out.b[i]};
            for (int c = 0; c < 3; ++c)
              worst = std::max(worst, std::fabs(got[c] - std::clamp(ref[c], 0.0, 1.0)));
          }
          INFO(format_name(fmt, depth)
               << " matrix " << int(m) << " limited " << limited << " worst " << worst);
          // A few float roundings of values below 2: well under a millionth.
          CHECK(worst <= 1e-6);
        }
      }
}

TEST_CASE("colour at depth: rgb -> frame -> rgb -> frame round trips within one code") {
  for (const int depth : kDepths)
    for (const PixelFormat fmt : kFormats)
      for (auto [w, h] : {std::pair{1, 1}, {2, 2}, {3, 2}, {17, 9}, {33, 31}})
        for (ColorMatrix m : {ColorMatrix::bt601, ColorMatrix::bt709, ColorMatrix::bt2020})
          for (ColorRange range : {ColorRange::limited, ColorRange::full}) {
            RgbFPlanes src = smooth_rgb(w, h), mid(w, h);
            Image a = frame(fmt, w, h, depth, m, range), b = frame(fmt, w, h, depth, m, range);
            cpu::rgb_f32_to_frame(src.planes(), a.view(), 2);
            cpu::frame_to_rgb_f32(a.view(), mid.planes(), 2);
            cpu::rgb_f32_to_frame(mid.planes(), b.view(), 2);
            INFO(format_name(fmt, depth)
                 << " " << w << "x" << h << " matrix " << int(m) << " range " << int(range));
            CHECK(max_code_diff(a.view(), b.view()) <= 1);
            // The decoded luma is the source's within a code of the depth (4:4:4 and RGB keep
            // each pixel's colour).
            if (fmt == PixelFormat::yuv444p || fmt == PixelFormat::rgb24) {
              double worst = 0.0;
              for (int i = 0; i < w * h; ++i)
                worst = std::max({worst, std::fabs(double(mid.r[i]) - src.r[i]),
                                  std::fabs(double(mid.g[i]) - src.g[i]),
                                  std::fabs(double(mid.b[i]) - src.b[i])});
              CHECK(worst * max_code(depth) <= 2.0);
            }
          }
}

TEST_CASE("colour at depth: nv12 (P010/P016) equals yuv420p at the same depth, both directions") {
  std::mt19937 rng(23);
  for (const int depth : kDepths)
    for (auto [w, h] : {std::pair{1, 1}, {3, 2}, {17, 9}, {64, 37}}) {
      std::uniform_int_distribution<int> code(0, max_code(depth));
      Image planar =
          frame(PixelFormat::yuv420p, w, h, depth, ColorMatrix::bt709, ColorRange::limited);
      Image nv12 = frame(PixelFormat::nv12, w, h, depth, ColorMatrix::bt709, ColorRange::limited);
      const ImageView& p = planar.view();
      const ImageView& q = nv12.view();
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
          const int v = code(rng);
          set_sample(p, 0, x, y, v);
          set_sample(q, 0, x, y, v);
        }
      for (int y = 0; y < p.planes[1].height; ++y)
        for (int x = 0; x < p.planes[1].width; ++x) {
          const int u = code(rng), v = code(rng);
          set_sample(p, 1, x, y, u);
          set_sample(p, 2, x, y, v);
          set_sample(q, 1, 2 * x, y, u);
          set_sample(q, 1, 2 * x + 1, y, v);
        }
      INFO(format_name(PixelFormat::nv12, depth) << " " << w << "x" << h);
      // The value sits in the high bits: P010's low six bits are zero.
      CHECK(stored(q, 0, 0, 0) == sample(q, 0, 0, 0) << (16 - depth));
      RgbFPlanes from_planar(w, h), from_nv12(w, h);
      cpu::frame_to_rgb_f32(p, from_planar.planes(), 2);
      cpu::frame_to_rgb_f32(q, from_nv12.planes(), 1);
      CHECK(from_planar.r == from_nv12.r);
      CHECK(from_planar.g == from_nv12.g);
      CHECK(from_planar.b == from_nv12.b);

      RgbFPlanes src = smooth_rgb(w, h);
      cpu::rgb_f32_to_frame(src.planes(), planar.view(), 1);
      cpu::rgb_f32_to_frame(src.planes(), nv12.view(), 2);
      long long differing = 0, low_bits = 0;
      const int shift = 16 - depth;
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
          differing += sample(p, 0, x, y) != sample(q, 0, x, y);
          low_bits += (stored(q, 0, x, y) & ((1 << shift) - 1)) != 0;
        }
      for (int y = 0; y < p.planes[1].height; ++y)
        for (int x = 0; x < p.planes[1].width; ++x) {
          differing += sample(p, 1, x, y) != sample(q, 1, 2 * x, y);
          differing += sample(p, 2, x, y) != sample(q, 1, 2 * x + 1, y);
          low_bits += (stored(q, 1, 2 * x, y) & ((1 << shift) - 1)) != 0;
          low_bits += (stored(q, 1, 2 * x + 1, y) & ((1 << shift) - 1)) != 0;
        }
      CHECK(differing == 0);
      CHECK(low_bits == 0);
    }
}

TEST_CASE("colour at depth: thread counts give identical frames; depths outside 8..16 refused") {
  for (const int depth : kDepths)
    for (const PixelFormat fmt : kFormats) {
      const int w = 41, h = 27;
      RgbFPlanes src = smooth_rgb(w, h);
      Image a = frame(fmt, w, h, depth, ColorMatrix::bt2020, ColorRange::full);
      Image b = frame(fmt, w, h, depth, ColorMatrix::bt2020, ColorRange::full);
      cpu::rgb_f32_to_frame(src.planes(), a.view(), 1);
      cpu::rgb_f32_to_frame(src.planes(), b.view(), 0);
      INFO(format_name(fmt, depth));
      CHECK(max_code_diff(a.view(), b.view()) == 0);
      RgbFPlanes x(w, h), y(w, h);
      cpu::frame_to_rgb_f32(a.view(), x.planes(), 1);
      cpu::frame_to_rgb_f32(a.view(), y.planes(), 0);
      CHECK(x.r == y.r);
      CHECK(x.g == y.g);
      CHECK(x.b == y.b);
    }
  Image img = frame(PixelFormat::yuv420p, 4, 4, 16, ColorMatrix::bt709, ColorRange::limited);
  RgbFPlanes out(4, 4);
  for (const int bad : {7, 17}) {
    ImageView v = img.view();
    v.depth = bad;
    CHECK_THROWS_AS(cpu::frame_to_rgb_f32(v, out.planes(), 1), std::invalid_argument);
    CHECK_THROWS_AS(cpu::rgb_f32_to_frame(out.planes(), v, 1), std::invalid_argument);
  }
}
