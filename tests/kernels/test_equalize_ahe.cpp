// Sliding-window AHE / CLAHE on the CPU against the naive per-pixel oracle: tables of sizes,
// windows (including larger than the image) and clip limits, every colour mode and pixel format,
// thread counts.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <stdexcept>
#include <vector>

#ifdef HAZEFREE_HAVE_OPENCV
#include <opencv2/imgproc.hpp>
#endif

#include "kernels/color_convert.hpp"
#include "kernels/equalize.hpp"
#include "oracles/equalize_oracle.hpp"
#include "test_equalize_helpers.hpp"

using namespace hazefree;
using namespace hazefree::test;

namespace {

Image run_ahe(const ImageView& in, ColorMode color, int window, float clip, int threads) {
  Image out(in.format, in.width, in.height, 32);
  AheParams params;
  params.window = window;
  params.clip = clip;
  cpu::AdaptiveEqualizer ahe(params, color, threads);
  ahe.process(in, out.view());
  return out;
}

oracle::Grey run_ahe_grey(const Image& in, int window, float clip, int threads) {
  return channel_of(run_ahe(in.view(), ColorMode::luma, window, clip, threads).view(), 0);
}

}  // namespace

TEST_CASE("ahe: table of sizes, windows and clip limits equals the naive oracle") {
  struct SizeCase {
    std::string name;
    Image image;
    std::vector<int> windows;
  };
  const std::vector<int> all_windows = {3, 5, 7, 9, 15, 31, 63, 255};
  std::vector<SizeCase> cases;
  cases.push_back({"1x1", random_frame(PixelFormat::gray8, 1, 1, 1), all_windows});
  cases.push_back({"2x2", random_frame(PixelFormat::gray8, 2, 2, 2), all_windows});
  cases.push_back({"3x2", random_frame(PixelFormat::gray8, 3, 2, 3), all_windows});
  cases.push_back({"2x3", random_frame(PixelFormat::gray8, 2, 3, 4), all_windows});
  cases.push_back({"17x9", random_frame(PixelFormat::gray8, 17, 9, 5, 40, 160), all_windows});
  cases.push_back({"33x5", random_frame(PixelFormat::gray8, 33, 5, 6), all_windows});
  cases.push_back({"45x31", smooth_frame(PixelFormat::gray8, 45, 31, 7), all_windows});
  {  // rows of very different ranges: dark bands, bright bands, one full-range row
    Image banded = random_frame(PixelFormat::gray8, 70, 40, 10, 0, 15);
    PlaneView& p = banded.view().planes[0];
    for (int y = 0; y < 40; ++y)
      for (int x = 0; x < 70; ++x) {
        std::uint8_t& v = p.data[y * p.stride + x];
        if ((y / 6) % 2) v = static_cast<std::uint8_t>(200 + v * 3);
        if (y == 21) v = static_cast<std::uint8_t>(x * 255 / 69);
      }
    cases.push_back({"70x40 banded", std::move(banded), {3, 5, 13, 31, 63}});
  }
  cases.push_back({"200x120 random", random_frame(PixelFormat::gray8, 200, 120, 8), {3, 31, 63}});
  cases.push_back({"200x120 smooth", smooth_frame(PixelFormat::gray8, 200, 120, 9), {3, 31, 63}});
  for (const SizeCase& c : cases)
    for (int window : c.windows)
      for (float clip : {0.f, 0.5f, 2.f, 40.f}) {
        INFO(c.name << " window " << window << " clip " << clip);
        const oracle::Grey src = channel_of(c.image.view(), 0);
        const oracle::Grey expected = oracle::ahe(src, window, clip);
        const oracle::Grey got = run_ahe_grey(c.image, window, clip, 2);
        CHECK(count_differences(expected, got, c.name) == 0);
        if (src.width * src.height > 4) CHECK(count_changed(src, got) > 0);
      }
}

TEST_CASE("ahe: every window from 3 to the image size, clipped and not") {
  const Image in = random_frame(PixelFormat::gray8, 23, 14, 20, 10, 200);
  const oracle::Grey src = channel_of(in.view(), 0);
  for (int window = 3; window <= 2 * 14 + 3; window += 2)
    for (float clip : {0.f, 1.f}) {
      INFO("window " << window << " clip " << clip);
      CHECK(count_differences(oracle::ahe(src, window, clip), run_ahe_grey(in, window, clip, 1), "w") == 0);
    }
}

TEST_CASE("ahe: 1080p frame and windows past 255 (32-bit window counters), sampled pixels") {
  struct BigCase {
    const Image* image;
    int window;
    float clip;
  };
  const Image hd = smooth_frame(PixelFormat::gray8, 1920, 1080, 30);
  const Image square = random_frame(PixelFormat::gray8, 300, 280, 31, 30, 220);
  for (const BigCase& c : {BigCase{&hd, 63, 0.f}, BigCase{&hd, 63, 2.f}, BigCase{&square, 301, 0.f},
                           BigCase{&square, 301, 3.f}, BigCase{&square, 511, 0.f}}) {
    const ImageView& v = c.image->view();
    INFO(v.width << "x" << v.height << " window " << c.window << " clip " << c.clip);
    const oracle::Grey src = channel_of(v, 0);
    const oracle::Grey got = run_ahe_grey(*c.image, c.window, c.clip, 2);
    // Corners, edges, strip boundaries and random interior pixels.
    std::vector<std::pair<int, int>> points = {{0, 0}, {v.width - 1, 0}, {0, v.height - 1},
                                               {v.width - 1, v.height - 1}, {v.width / 2, v.height / 2 - 1},
                                               {v.width / 2, v.height / 2}, {1, v.height / 2}};
    std::mt19937 rng(7);
    for (int i = 0; i < 60; ++i)
      points.push_back({static_cast<int>(rng() % v.width), static_cast<int>(rng() % v.height)});
    for (int i = 0; i < 20; ++i)  // within a window of the borders
      points.push_back({static_cast<int>(rng() % 40), static_cast<int>(rng() % v.height)});
    int diffs = 0;
    for (auto [x, y] : points) diffs += oracle::ahe_pixel(src, c.window, c.clip, x, y) != got.at(x, y);
    CHECK(diffs == 0);
    CHECK(count_changed(src, got) > v.width * v.height / 2);
  }
}

TEST_CASE("ahe: every thread count gives the one-thread result") {
  for (const Image& in : frame_list(random_frame(PixelFormat::gray8, 640, 360, 40),
                                    smooth_frame(PixelFormat::gray8, 97, 5, 41)))
    for (int window : {7, 63})
      for (float clip : {0.f, 2.f}) {
        INFO(in.view().width << "x" << in.view().height << " window " << window << " clip " << clip);
        const oracle::Grey one = run_ahe_grey(in, window, clip, 1);
        for (int threads : {2, 3, 7, 0}) CHECK(same(one, run_ahe_grey(in, window, clip, threads)));
      }
}

TEST_CASE("ahe: a window larger than the image is reduced to min(width, height) - 1") {
  const Image in = smooth_frame(PixelFormat::gray8, 40, 12, 50);
  const oracle::Grey reduced = run_ahe_grey(in, 2 * 11 + 1, 0.f, 1);
  for (int window : {25, 63, 511}) CHECK(same(reduced, run_ahe_grey(in, window, 0.f, 1)));
  CHECK(!same(reduced, run_ahe_grey(in, 21, 0.f, 1)));
}

TEST_CASE("ahe: one equalizer across frames and sizes gives the fresh result") {
  AheParams params;
  params.window = 15;
  params.clip = 1.5f;
  cpu::AdaptiveEqualizer ahe(params, ColorMode::luma, 2);
  for (auto [w, h, seed] : {std::tuple{64, 48, 1}, std::tuple{64, 48, 2}, std::tuple{33, 70, 3}, std::tuple{64, 48, 4}}) {
    const Image in = random_frame(PixelFormat::gray8, w, h, 60 + seed);
    Image out(PixelFormat::gray8, w, h, 32);
    ahe.process(in.view(), out.view());
    CHECK(same(oracle::ahe(channel_of(in.view(), 0), 15, 1.5f), channel_of(out.view(), 0)));
  }
}

TEST_CASE("ahe: YUV luma and grey equalize Y, limited-range rule when limited") {
  for (PixelFormat f : kYuvFormats)
    for (ColorRange range : {ColorRange::limited, ColorRange::full})
      for (ColorMode mode : {ColorMode::luma, ColorMode::grey}) {
        const int w = 37, h = 21;
        INFO(describe(f, w, h) << (range == ColorRange::limited ? " limited" : " full")
                               << (mode == ColorMode::grey ? " grey" : " luma"));
        const Image in = random_frame(f, w, h, 70, 16, 235, range);
        const Image out = run_ahe(in.view(), mode, 9, 2.f, 2);
        oracle::Grey expected = oracle::ahe(channel_of(in.view(), 0), 9, 2.f);
        if (range == ColorRange::limited) expected = map_codes(expected, oracle::limited_code);
        CHECK(count_differences(expected, channel_of(out.view(), 0), "Y") == 0);
        CHECK(count_changed(channel_of(in.view(), 0), channel_of(out.view(), 0)) > 0);
        check_chroma_of_luma_mode(in.view(), out.view(), mode);
      }
}

TEST_CASE("ahe: YUV rgb equalizes the frame's RGB channels") {
  for (PixelFormat f : kYuvFormats) {
    INFO(to_string(f));
    const Image in = smooth_frame(f, 31, 18, 80);
    const int w = in.view().width, h = in.view().height;
    std::vector<std::uint8_t> r(w * h), g(w * h), b(w * h);
    cpu::frame_to_rgb_u8(in.view(), RgbPlanesU8{r.data(), g.data(), b.data(), w}, 1);
    for (auto* p : {&r, &g, &b}) *p = oracle::ahe(oracle::Grey{w, h, *p}, 7, 0.f).pixels;
    Image expected(f, w, h, 16);
    expected.view().matrix = in.view().matrix;
    expected.view().range = in.view().range;
    cpu::rgb_u8_to_frame(RgbPlanesU8{r.data(), g.data(), b.data(), w}, expected.view(), 1);
    const Image out = run_ahe(in.view(), ColorMode::rgb, 7, 0.f, 2);
    require_same_frames(expected.view(), out.view(), "rgb");
    CHECK(count_changed(channel_of(in.view(), 0), channel_of(out.view(), 0)) > 0);
  }
}

TEST_CASE("ahe: gray8 in every colour mode is the plane equalized") {
  const Image in = random_frame(PixelFormat::gray8, 26, 19, 90, 50, 150);
  const oracle::Grey expected = oracle::ahe(channel_of(in.view(), 0), 11, 0.5f);
  for (ColorMode mode : {ColorMode::luma, ColorMode::rgb, ColorMode::grey})
    CHECK(same(expected, channel_of(run_ahe(in.view(), mode, 11, 0.5f, 2).view(), 0)));
}

TEST_CASE("ahe: rgb24 rgb equalizes each channel") {
  const Image in = random_frame(PixelFormat::rgb24, 41, 27, 95);
  const Image out = run_ahe(in.view(), ColorMode::rgb, 13, 2.f, 2);
  for (int c = 0; c < 3; ++c)
    CHECK(count_differences(oracle::ahe(channel_of(in.view(), 0, c), 13, 2.f), channel_of(out.view(), 0, c), "rgb") == 0);
}

#ifdef HAZEFREE_HAVE_OPENCV
TEST_CASE("ahe: rgb24 luma and grey go through OpenCV's YCrCb and grey formulas") {
  const Image in = random_frame(PixelFormat::rgb24, 52, 33, 96, 30, 220);
  const cv::Mat rgb = mat_of_rgb24(in.view());
  {
    cv::Mat ycrcb;
    cv::cvtColor(rgb, ycrcb, cv::COLOR_RGB2YCrCb);
    std::vector<cv::Mat> planes;
    cv::split(ycrcb, planes);
    planes[0] = mat_of(oracle::ahe(grey_of(planes[0]), 15, 0.f));
    cv::merge(planes, ycrcb);
    cv::Mat expected;
    cv::cvtColor(ycrcb, expected, cv::COLOR_YCrCb2RGB);
    const cv::Mat got = mat_of_rgb24(run_ahe(in.view(), ColorMode::luma, 15, 0.f, 2).view());
    CHECK(cv::norm(expected, got, cv::NORM_INF) == 0);
    CHECK(cv::norm(rgb, got, cv::NORM_INF) > 0);
  }
  {
    cv::Mat grey;
    cv::cvtColor(rgb, grey, cv::COLOR_RGB2GRAY);
    const oracle::Grey expected = oracle::ahe(grey_of(grey), 15, 2.f);
    const Image out = run_ahe(in.view(), ColorMode::grey, 15, 2.f, 2);
    for (int c = 0; c < 3; ++c) CHECK(same(expected, channel_of(out.view(), 0, c)));
  }
}
#endif

TEST_CASE("ahe: rgb-bits and bad parameters are refused") {
  AheParams params;
  CHECK_THROWS_AS(cpu::AdaptiveEqualizer(params, ColorMode::rgb_bits, 1), std::invalid_argument);
  params.window = 4;
  CHECK_THROWS_AS(cpu::AdaptiveEqualizer(params, ColorMode::luma, 1), std::invalid_argument);
  params.window = 1;
  CHECK_THROWS_AS(cpu::AdaptiveEqualizer(params, ColorMode::luma, 1), std::invalid_argument);
  params.window = 5;
  params.clip = -1.f;
  CHECK_THROWS_AS(cpu::AdaptiveEqualizer(params, ColorMode::luma, 1), std::invalid_argument);
}
