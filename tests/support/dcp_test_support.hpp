// Helpers of the dehaze and colour tests: random and photographic test images, and the moves
// between oracle grids, product planes and frames.
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/dehaze_ops.hpp"
#include "common/image.hpp"
#include "common/params.hpp"
#include "oracles/dehaze_oracle.hpp"
#include "support/test_support.hpp"

#ifdef HAZEFREE_HAVE_OPENCV
#include <opencv2/imgcodecs.hpp>
#endif

namespace hazefree::test {

// Owning float plane with a stride wider than the width (catches stride mistakes).
struct OwnedPlane {
  std::vector<float> storage;
  PlaneF plane;
  OwnedPlane(int w, int h, int pad = 3)
      : storage(static_cast<std::size_t>(w + pad) * h), plane{storage.data(), w, h, w + pad} {}
};

inline OwnedPlane to_plane(const oracle::Grid<float>& g) {
  OwnedPlane p(g.w, g.h);
  for (int y = 0; y < g.h; ++y)
    for (int x = 0; x < g.w; ++x) p.plane.row(y)[x] = g.at(x, y);
  return p;
}

inline oracle::Grid<float> to_grid(const PlaneF& p) {
  oracle::Grid<float> g(p.width, p.height);
  for (int y = 0; y < p.height; ++y)
    for (int x = 0; x < p.width; ++x) g.at(x, y) = p.row(y)[x];
  return g;
}

// Values in [0,1]; `levels` > 0 quantises to that many steps (forces ties).
inline oracle::Grid<float> random_grid(int w, int h, unsigned seed, int levels = 0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  oracle::Grid<float> g(w, h);
  for (float& v : g.v) {
    v = u(rng);
    if (levels > 0) v = static_cast<float>(static_cast<int>(v * levels)) / levels;
  }
  return g;
}

// An interleaved 8-bit RGB picture.
struct Rgb8 {
  int w = 0, h = 0;
  std::vector<std::uint8_t> px;  // r, g, b per pixel, rows of 3 w bytes
  std::uint8_t* at(int x, int y) { return px.data() + (static_cast<std::size_t>(y) * w + x) * 3; }
  const std::uint8_t* at(int x, int y) const {
    return px.data() + (static_cast<std::size_t>(y) * w + x) * 3;
  }
};

// samples/images/<name>, RGB order; empty when it cannot be read (or without OpenCV).
inline Rgb8 load_sample_rgb(const std::string& name) {
  Rgb8 img;
#ifdef HAZEFREE_HAVE_OPENCV
  const cv::Mat bgr = cv::imread(sample_path("images/" + name), cv::IMREAD_COLOR);
  if (bgr.empty()) return img;
  img.w = bgr.cols;
  img.h = bgr.rows;
  img.px.resize(static_cast<std::size_t>(img.w) * img.h * 3);
  for (int y = 0; y < img.h; ++y)
    for (int x = 0; x < img.w; ++x) {
      const cv::Vec3b v = bgr.at<cv::Vec3b>(y, x);
      std::uint8_t* d = img.at(x, y);
      d[0] = v[2];
      d[1] = v[1];
      d[2] = v[0];
    }
#else
  (void)name;
#endif
  return img;
}

inline Rgb8 crop(const Rgb8& src, int x0, int y0, int w, int h) {
  Rgb8 out{w, h, std::vector<std::uint8_t>(static_cast<std::size_t>(w) * h * 3)};
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) out.at(x, y)[c] = src.at((x0 + x) % src.w, (y0 + y) % src.h)[c];
  return out;
}

// Float planes of an 8-bit picture (x / 255).
inline std::array<oracle::Grid<float>, 3> to_float_rgb(const Rgb8& img) {
  std::array<oracle::Grid<float>, 3> out{oracle::Grid<float>(img.w, img.h),
                                         oracle::Grid<float>(img.w, img.h),
                                         oracle::Grid<float>(img.w, img.h)};
  for (int y = 0; y < img.h; ++y)
    for (int x = 0; x < img.w; ++x)
      for (int c = 0; c < 3; ++c) out[c].at(x, y) = img.at(x, y)[c] / 255.f;
  return out;
}

inline void copy_into(const Rgb8& img, ImageView& view) {  // view is rgb24, same size
  for (int y = 0; y < img.h; ++y)
    for (int x = 0; x < img.w * 3; ++x)
      view.planes[0].data[static_cast<std::size_t>(y) * view.planes[0].stride + x] =
          img.px[static_cast<std::size_t>(y) * img.w * 3 + x];
}

inline Rgb8 copy_from(const ImageView& view) {  // view is rgb24
  Rgb8 img{view.width, view.height,
           std::vector<std::uint8_t>(static_cast<std::size_t>(view.width) * view.height * 3)};
  for (int y = 0; y < img.h; ++y)
    for (int x = 0; x < img.w * 3; ++x)
      img.px[static_cast<std::size_t>(y) * img.w * 3 + x] =
          view.planes[0].data[static_cast<std::size_t>(y) * view.planes[0].stride + x];
  return img;
}

// The oracle's parameters for the product's DCP parameters (A's selection is passed apart).
inline oracle::Params oracle_params(const DcpParams& p) {
  oracle::Params o;
  o.patch_radius = p.patch_radius;
  o.omega = p.omega;
  o.gf_radius = p.gf_radius;
  o.gf_eps = p.gf_eps;
  o.gf_subsample = p.gf_subsample;
  o.k_tolerance = p.k_tolerance;
  o.t0 = p.t0;
  o.brightness = p.brightness;
  return o;
}

}  // namespace hazefree::test
