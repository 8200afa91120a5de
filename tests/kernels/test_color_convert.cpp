// Colour conversion: known values against the double reference, round trips on every format and
// odd sizes, the chroma block rule at odd edges, float vs fixed point, OpenCV's full-range BT.601,
// and thread independence.
#include <algorithm>
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/color_convert.hpp"
#include "kernels/color_rules.hpp"
#include "oracles/color_oracle.hpp"

#ifdef HAZEFREE_HAVE_OPENCV
#include <opencv2/imgproc.hpp>
#endif

using namespace hazefree;

namespace {

constexpr PixelFormat kFormats[] = {PixelFormat::yuv420p, PixelFormat::yuv422p, PixelFormat::yuv444p,
                                    PixelFormat::nv12, PixelFormat::gray8, PixelFormat::rgb24};

oracle::Matrix to_oracle(ColorMatrix m) {
  return m == ColorMatrix::bt709 ? oracle::Matrix::bt709
                                 : (m == ColorMatrix::bt2020 ? oracle::Matrix::bt2020 : oracle::Matrix::bt601);
}

struct Rgb8Planes {
  int w, h;
  std::vector<std::uint8_t> r, g, b;
  Rgb8Planes(int w_, int h_) : w(w_), h(h_), r(w_ * h_), g(w_ * h_), b(w_ * h_) {}
  RgbPlanesU8 planes() { return {r.data(), g.data(), b.data(), w}; }
};

struct RgbFPlanes {
  int w, h;
  std::vector<float> r, g, b;
  RgbFPlanes(int w_, int h_) : w(w_), h(h_), r(w_ * h_), g(w_ * h_), b(w_ * h_) {}
  RgbPlanesF planes() { return {r.data(), g.data(), b.data(), w}; }
};

Image frame(PixelFormat f, int w, int h, ColorMatrix m, ColorRange r) {
  Image img(f, w, h);
  img.view().matrix = m;
  img.view().range = r;
  return img;
}

// Smooth colours well inside the gamut, so that a round trip never clamps.
Rgb8Planes smooth_rgb(int w, int h) {
  Rgb8Planes p(w, h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      p.r[y * w + x] = static_cast<std::uint8_t>(60 + (x * 5 + y * 3) % 120);
      p.g[y * w + x] = static_cast<std::uint8_t>(70 + (x * 2 + y * 7) % 110);
      p.b[y * w + x] = static_cast<std::uint8_t>(50 + (x * 3 + y * 2) % 130);
    }
  return p;
}

int max_frame_diff(const ImageView& a, const ImageView& b) {
  int worst = 0;
  for (int i = 0; i < a.plane_count; ++i)
    for (int y = 0; y < a.planes[i].height; ++y)
      for (int x = 0; x < a.planes[i].width * bytes_per_sample(a.format, i); ++x)
        worst = std::max(worst, std::abs(a.planes[i].data[y * a.planes[i].stride + x] -
                                         b.planes[i].data[y * b.planes[i].stride + x]));
  return worst;
}

}  // namespace

TEST_CASE("colour: known values for white, black, grey and primaries") {
  const std::array<double, 3> colours[] = {{1, 1, 1}, {0, 0, 0}, {0.5, 0.5, 0.5}, {1, 0, 0},
                                           {0, 1, 0}, {0, 0, 1}, {1, 1, 0}, {0, 1, 1}};
  for (ColorMatrix m : {ColorMatrix::bt601, ColorMatrix::bt709, ColorMatrix::bt2020})
    for (ColorRange range : {ColorRange::limited, ColorRange::full}) {
      const bool limited = range == ColorRange::limited;
      for (const auto& c : colours) {
        const auto ref = oracle::rgb_to_ycbcr(c[0], c[1], c[2], to_oracle(m), limited);
        // Fixed point from 8-bit codes.
        Rgb8Planes in(1, 1);
        in.r[0] = static_cast<std::uint8_t>(std::lround(c[0] * 255));
        in.g[0] = static_cast<std::uint8_t>(std::lround(c[1] * 255));
        in.b[0] = static_cast<std::uint8_t>(std::lround(c[2] * 255));
        const auto ref8 = oracle::rgb_to_ycbcr(in.r[0] / 255.0, in.g[0] / 255.0, in.b[0] / 255.0,
                                               to_oracle(m), limited);
        Image f = frame(PixelFormat::yuv444p, 1, 1, m, range);
        cpu::rgb_u8_to_frame(in.planes(), f.view(), 1);
        INFO("matrix " << int(m) << " limited " << limited << " rgb " << c[0] << "," << c[1] << "," << c[2]);
        for (int i = 0; i < 3; ++i) CHECK(std::abs(f.view().planes[i].data[0] - ref8[i]) <= 0.5 + 1e-9);
        // Float path.
        RgbFPlanes fin(1, 1);
        fin.r[0] = static_cast<float>(c[0]);
        fin.g[0] = static_cast<float>(c[1]);
        fin.b[0] = static_cast<float>(c[2]);
        Image g = frame(PixelFormat::yuv444p, 1, 1, m, range);
        cpu::rgb_f32_to_frame(fin.planes(), g.view(), 1);
        for (int i = 0; i < 3; ++i) CHECK(std::abs(g.view().planes[i].data[0] - ref[i]) <= 0.5 + 1e-4);
      }
      // Exact anchors: white, black and grey.
      Image f = frame(PixelFormat::yuv444p, 1, 1, m, range);
      Rgb8Planes in(1, 1);
      for (int v : {0, 128, 255}) {
        in.r[0] = in.g[0] = in.b[0] = static_cast<std::uint8_t>(v);
        cpu::rgb_u8_to_frame(in.planes(), f.view(), 1);
        const int y_expected = limited ? 16 + (219 * v + 127) / 255 : v;
        CHECK(f.view().planes[0].data[0] == y_expected);
        CHECK(f.view().planes[1].data[0] == 128);
        CHECK(f.view().planes[2].data[0] == 128);
        Rgb8Planes back(1, 1);
        cpu::frame_to_rgb_u8(f.view(), back.planes(), 1);
        CHECK(std::abs(back.r[0] - v) <= 1);
        CHECK(back.r[0] == back.g[0]);
        CHECK(back.g[0] == back.b[0]);
      }
    }
}

TEST_CASE("colour: decoding known codes") {
  for (ColorMatrix m : {ColorMatrix::bt601, ColorMatrix::bt709})
    for (ColorRange range : {ColorRange::limited, ColorRange::full}) {
      const bool limited = range == ColorRange::limited;
      const int codes[][3] = {{limited ? 235 : 255, 128, 128}, {limited ? 16 : 0, 128, 128},
                              {81, 90, 240}, {145, 54, 34}, {41, 240, 110}, {126, 128, 128}};
      for (const auto& c : codes) {
        Image f = frame(PixelFormat::yuv444p, 1, 1, m, range);
        for (int i = 0; i < 3; ++i) f.view().planes[i].data[0] = static_cast<std::uint8_t>(c[i]);
        const auto ref = oracle::ycbcr_to_rgb(c[0], c[1], c[2], to_oracle(m), limited);
        RgbFPlanes out(1, 1);
        Rgb8Planes out8(1, 1);
        cpu::frame_to_rgb_f32(f.view(), out.planes(), 1);
        cpu::frame_to_rgb_u8(f.view(), out8.planes(), 1);
        const float got[3] = {out.r[0], out.g[0], out.b[0]};
        const int got8[3] = {out8.r[0], out8.g[0], out8.b[0]};
        for (int i = 0; i < 3; ++i) {
          const double expected = std::clamp(ref[i], 0.0, 1.0);
          CHECK(got[i] == doctest::Approx(expected).epsilon(1e-5));
          CHECK(std::abs(got8[i] - expected * 255) <= 0.5 + 1e-3);
        }
      }
    }
}

TEST_CASE("colour: yuv -> rgb -> yuv round trips on every format and odd sizes") {
  for (PixelFormat fmt : kFormats)
    for (auto [w, h] : {std::pair{1, 1}, {2, 2}, {3, 2}, {17, 9}, {33, 31}, {64, 48}})
      for (ColorMatrix m : {ColorMatrix::bt601, ColorMatrix::bt709, ColorMatrix::bt2020})
        for (ColorRange range : {ColorRange::limited, ColorRange::full}) {
          Rgb8Planes src = smooth_rgb(w, h);
          Image a = frame(fmt, w, h, m, range), b = frame(fmt, w, h, m, range),
                c = frame(fmt, w, h, m, range);
          cpu::rgb_u8_to_frame(src.planes(), a.view(), 2);
          Rgb8Planes mid(w, h);
          cpu::frame_to_rgb_u8(a.view(), mid.planes(), 2);
          cpu::rgb_u8_to_frame(mid.planes(), b.view(), 2);
          RgbFPlanes midf(w, h);
          cpu::frame_to_rgb_f32(a.view(), midf.planes(), 2);
          cpu::rgb_f32_to_frame(midf.planes(), c.view(), 2);
          INFO(to_string(fmt) << " " << w << "x" << h << " matrix " << int(m) << " range " << int(range));
          CHECK(max_frame_diff(a.view(), b.view()) <= 1);
          CHECK(max_frame_diff(a.view(), c.view()) <= 1);
        }
}

TEST_CASE("colour: float and fixed-point paths agree within one code, any thread count") {
  std::mt19937 rng(3);
  for (PixelFormat fmt : kFormats) {
    const int w = 37, h = 23;
    Image in = frame(fmt, w, h, ColorMatrix::bt709, ColorRange::limited);
    for (int i = 0; i < in.view().plane_count; ++i) {
      const PlaneView& p = in.view().planes[i];
      for (int y = 0; y < p.height; ++y)
        for (int x = 0; x < p.width * bytes_per_sample(fmt, i); ++x)
          p.data[y * p.stride + x] = static_cast<std::uint8_t>(rng() % 256);
    }
    Rgb8Planes a(w, h), b(w, h);
    RgbFPlanes f(w, h);
    cpu::frame_to_rgb_u8(in.view(), a.planes(), 1);
    cpu::frame_to_rgb_u8(in.view(), b.planes(), 0);
    cpu::frame_to_rgb_f32(in.view(), f.planes(), 2);
    CHECK(a.r == b.r);
    CHECK(a.g == b.g);
    CHECK(a.b == b.b);
    int worst = 0;
    for (int i = 0; i < w * h; ++i) {
      worst = std::max(worst, static_cast<int>(std::fabs(f.r[i] * 255 - a.r[i]) + 0.5));
      worst = std::max(worst, static_cast<int>(std::fabs(f.g[i] * 255 - a.g[i]) + 0.5));
      worst = std::max(worst, static_cast<int>(std::fabs(f.b[i] * 255 - a.b[i]) + 0.5));
    }
    INFO(to_string(fmt));
    CHECK(worst <= 1);
    Image o1 = frame(fmt, w, h, ColorMatrix::bt709, ColorRange::limited);
    Image o2 = frame(fmt, w, h, ColorMatrix::bt709, ColorRange::limited);
    cpu::rgb_f32_to_frame(f.planes(), o1.view(), 1);
    cpu::rgb_f32_to_frame(f.planes(), o2.view(), 0);
    CHECK(max_frame_diff(o1.view(), o2.view()) == 0);
  }
}

TEST_CASE("colour: chroma is the rounded average of the pixels of each block, partial at edges") {
  // 3x3 yuv420p: blocks of 4, 2 (right column, bottom row) and 1 (corner) pixels.
  const int w = 3, h = 3;
  Rgb8Planes src(w, h);
  std::mt19937 rng(5);
  for (int i = 0; i < w * h; ++i) {
    src.r[i] = static_cast<std::uint8_t>(rng() % 256);
    src.g[i] = static_cast<std::uint8_t>(rng() % 256);
    src.b[i] = static_cast<std::uint8_t>(rng() % 256);
  }
  Image f = frame(PixelFormat::yuv420p, w, h, ColorMatrix::bt601, ColorRange::full);
  cpu::rgb_u8_to_frame(src.planes(), f.view(), 1);
  Image nv = frame(PixelFormat::nv12, w, h, ColorMatrix::bt601, ColorRange::full);
  cpu::rgb_u8_to_frame(src.planes(), nv.view(), 1);
  for (int cy = 0; cy < 2; ++cy)
    for (int cx = 0; cx < 2; ++cx) {
      double cb = 0, cr = 0;
      int n = 0;
      for (int y = 2 * cy; y < std::min(h, 2 * cy + 2); ++y)
        for (int x = 2 * cx; x < std::min(w, 2 * cx + 2); ++x, ++n) {
          const int i = y * w + x;
          const auto ref = oracle::rgb_to_ycbcr(src.r[i] / 255.0, src.g[i] / 255.0, src.b[i] / 255.0,
                                                oracle::Matrix::bt601, false);
          cb += ref[1];
          cr += ref[2];
        }
      const int u = f.view().planes[1].data[cy * f.view().planes[1].stride + cx];
      const int v = f.view().planes[2].data[cy * f.view().planes[2].stride + cx];
      CHECK(std::abs(u - cb / n) <= 0.5 + 0.01);
      CHECK(std::abs(v - cr / n) <= 0.5 + 0.01);
      CHECK(nv.view().planes[1].data[cy * nv.view().planes[1].stride + 2 * cx] == u);
      CHECK(nv.view().planes[1].data[cy * nv.view().planes[1].stride + 2 * cx + 1] == v);
    }
}

#ifdef HAZEFREE_HAVE_OPENCV
TEST_CASE("colour: full-range BT.601 decoding agrees with OpenCV's YCrCb") {
  const int w = 31, h = 17;
  cv::Mat ycrcb(h, w, CV_8UC3);
  Image f = frame(PixelFormat::yuv444p, w, h, ColorMatrix::bt601, ColorRange::full);
  std::mt19937 rng(9);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const std::uint8_t Y = rng() % 256, U = rng() % 256, V = rng() % 256;
      ycrcb.at<cv::Vec3b>(y, x) = cv::Vec3b(Y, V, U);
      f.view().planes[0].data[y * f.view().planes[0].stride + x] = Y;
      f.view().planes[1].data[y * f.view().planes[1].stride + x] = U;
      f.view().planes[2].data[y * f.view().planes[2].stride + x] = V;
    }
  cv::Mat rgb;
  cv::cvtColor(ycrcb, rgb, cv::COLOR_YCrCb2RGB);
  Rgb8Planes out(w, h);
  cpu::frame_to_rgb_u8(f.view(), out.planes(), 1);
  int worst = 0;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const cv::Vec3b e = rgb.at<cv::Vec3b>(y, x);
      worst = std::max({worst, std::abs(e[0] - out.r[y * w + x]), std::abs(e[1] - out.g[y * w + x]),
                        std::abs(e[2] - out.b[y * w + x])});
    }
  CHECK(worst <= 1);
}
#endif
