// Frame builders and comparisons shared by the equalization tests.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#ifdef HAZEFREE_HAVE_OPENCV
#include <opencv2/core.hpp>
#endif

#include "common/image.hpp"
#include "oracles/equalize_oracle.hpp"

namespace hazefree::test {

inline std::string describe(PixelFormat f, int w, int h) {
  return std::string(to_string(f)) + " " + std::to_string(w) + "x" + std::to_string(h);
}

// Random bytes in every plane; `low`/`high` bound the values (a narrow range leaves room for
// equalization to stretch it).
inline Image random_frame(PixelFormat f, int w, int h, std::uint32_t seed, int low = 0,
                          int high = 255, ColorRange range = ColorRange::limited) {
  Image img(f, w, h, 64);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(low, high);
  ImageView& v = img.view();
  for (int i = 0; i < v.plane_count; ++i) {
    const PlaneView& p = v.planes[i];
    const int row = p.width * bytes_per_sample(f, i);
    for (int y = 0; y < p.height; ++y)
      for (int x = 0; x < row; ++x) p.data[static_cast<std::size_t>(y) * p.stride + x] =
          static_cast<std::uint8_t>(dist(rng));
  }
  v.range = is_yuv(f) ? range : ColorRange::full;
  return img;
}

// A smooth gradient with a little noise and a bright blob: natural-image-like content.
inline Image smooth_frame(PixelFormat f, int w, int h, std::uint32_t seed) {
  Image img(f, w, h, 64);
  std::mt19937 rng(seed);
  ImageView& v = img.view();
  for (int i = 0; i < v.plane_count; ++i) {
    const PlaneView& p = v.planes[i];
    const int bps = bytes_per_sample(f, i);
    for (int y = 0; y < p.height; ++y)
      for (int x = 0; x < p.width * bps; ++x) {
        const int sx = x / bps;
        const int dx = sx - p.width / 3, dy = y - p.height / 2;
        const int blob = (dx * dx + dy * dy) < (p.width * p.width) / 25 ? 60 : 0;
        const int value = 60 + (sx * 90) / (p.width + 1) + (y * 40) / (p.height + 1) + blob +
                          static_cast<int>(rng() % 7) + 5 * (x % bps);
        p.data[static_cast<std::size_t>(y) * p.stride + x] =
            static_cast<std::uint8_t>(value > 255 ? 255 : value);
      }
  }
  v.range = is_yuv(f) ? ColorRange::limited : ColorRange::full;
  return img;
}

// Byte `channel` of every sample of plane `plane` (channel < bytes per sample).
inline oracle::Grey channel_of(const ImageView& v, int plane, int channel = 0) {
  const PlaneView& p = v.planes[plane];
  const int bps = bytes_per_sample(v.format, plane);
  oracle::Grey g{p.width, p.height, std::vector<std::uint8_t>(static_cast<std::size_t>(p.width) * p.height)};
  for (int y = 0; y < p.height; ++y)
    for (int x = 0; x < p.width; ++x)
      g.pixels[static_cast<std::size_t>(y) * p.width + x] =
          p.data[static_cast<std::size_t>(y) * p.stride + static_cast<std::size_t>(x) * bps + channel];
  return g;
}

#ifdef HAZEFREE_HAVE_OPENCV
inline oracle::Grey grey_of(const cv::Mat& m) {
  oracle::Grey g{m.cols, m.rows, std::vector<std::uint8_t>(static_cast<std::size_t>(m.cols) * m.rows)};
  for (int y = 0; y < m.rows; ++y)
    for (int x = 0; x < m.cols; ++x) g.pixels[static_cast<std::size_t>(y) * m.cols + x] = m.at<std::uint8_t>(y, x);
  return g;
}

inline cv::Mat mat_of(const oracle::Grey& g) {
  cv::Mat m(g.height, g.width, CV_8UC1);
  for (int y = 0; y < g.height; ++y)
    for (int x = 0; x < g.width; ++x) m.at<std::uint8_t>(y, x) = g.at(x, y);
  return m;
}

// The rgb24 plane as an OpenCV 3-channel matrix (R, G, B order kept).
inline cv::Mat mat_of_rgb24(const ImageView& v) {
  cv::Mat m(v.height, v.width, CV_8UC3);
  for (int y = 0; y < v.height; ++y)
    for (int x = 0; x < 3 * v.width; ++x)
      m.ptr<std::uint8_t>(y)[x] = v.planes[0].data[static_cast<std::size_t>(y) * v.planes[0].stride + x];
  return m;
}
#endif

// Number of differing samples; reports the first few.
inline int count_differences(const oracle::Grey& expected, const oracle::Grey& actual,
                             const std::string& what) {
  REQUIRE(expected.width == actual.width);
  REQUIRE(expected.height == actual.height);
  int diffs = 0;
  for (int y = 0; y < expected.height; ++y)
    for (int x = 0; x < expected.width; ++x)
      if (expected.at(x, y) != actual.at(x, y)) {
        if (diffs < 3)
          MESSAGE(what << ": (" << x << "," << y << ") expected " << int(expected.at(x, y))
                       << " got " << int(actual.at(x, y)));
        ++diffs;
      }
  return diffs;
}

inline bool same(const oracle::Grey& a, const oracle::Grey& b) { return a.pixels == b.pixels; }

inline int count_changed(const oracle::Grey& before, const oracle::Grey& after) {
  int changed = 0;
  for (std::size_t i = 0; i < before.pixels.size(); ++i) changed += before.pixels[i] != after.pixels[i];
  return changed;
}

// Every plane of two frames equal.
inline void require_same_frames(const ImageView& a, const ImageView& b, const std::string& what) {
  REQUIRE(a.plane_count == b.plane_count);
  for (int i = 0; i < a.plane_count; ++i)
    for (int c = 0; c < bytes_per_sample(a.format, i); ++c) {
      INFO(what << " plane " << i << " byte " << c);
      CHECK(count_differences(channel_of(a, i, c), channel_of(b, i, c), what) == 0);
    }
}

inline oracle::Grey map_codes(const oracle::Grey& g, int (*f)(int)) {
  oracle::Grey out = g;
  for (std::uint8_t& p : out.pixels) p = static_cast<std::uint8_t>(f(p));
  return out;
}

inline oracle::Grey constant_like(const oracle::Grey& g, std::uint8_t value) {
  oracle::Grey out = g;
  for (std::uint8_t& p : out.pixels) p = value;
  return out;
}

// The chroma planes of a luma/grey-mode result: kept in luma mode, neutral (128) in grey mode.
inline void check_chroma_of_luma_mode(const ImageView& in, const ImageView& out, ColorMode mode) {
  for (int p = 1; p < in.plane_count; ++p)
    for (int c = 0; c < bytes_per_sample(in.format, p); ++c) {
      const oracle::Grey chroma = channel_of(in, p, c);
      CHECK(same(mode == ColorMode::grey ? constant_like(chroma, 128) : chroma, channel_of(out, p, c)));
    }
}

// Images are move-only: a braced list of them cannot be iterated, a vector can.
template <typename... Frames>
std::vector<Image> frame_list(Frames&&... frames) {
  std::vector<Image> list;
  (list.push_back(std::move(frames)), ...);
  return list;
}

inline const PixelFormat kAllFormats[] = {PixelFormat::yuv420p, PixelFormat::yuv422p,
                                          PixelFormat::yuv444p, PixelFormat::nv12,
                                          PixelFormat::gray8,   PixelFormat::rgb24};
inline const PixelFormat kYuvFormats[] = {PixelFormat::yuv420p, PixelFormat::yuv422p,
                                          PixelFormat::yuv444p, PixelFormat::nv12};

}  // namespace hazefree::test
