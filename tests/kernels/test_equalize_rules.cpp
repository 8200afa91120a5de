// The shared integer rules of kernels/equalize_rules.hpp against OpenCV and the naive oracle:
// the colour formulas exhaustively, reflect-101, the LUT rules, the CLAHE closed form.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#ifdef HAZEFREE_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#endif

#include "kernels/equalize_rules.hpp"
#include "oracles/equalize_oracle.hpp"

namespace rules = hazefree::equalize_rules;
namespace oracle = hazefree::oracle;

#ifdef HAZEFREE_HAVE_OPENCV
TEST_CASE("rules: RGB -> grey and YCrCb, and YCrCb -> RGB, equal OpenCV for every colour") {
  // 4096 x 4096 pixels hold all 2^24 colours once.
  cv::Mat all(4096, 4096, CV_8UC3);
  for (int i = 0; i < (1 << 24); ++i) {
    std::uint8_t* p = all.ptr<std::uint8_t>(i >> 12) + 3 * (i & 4095);
    p[0] = static_cast<std::uint8_t>(i >> 16);
    p[1] = static_cast<std::uint8_t>(i >> 8);
    p[2] = static_cast<std::uint8_t>(i);
  }
  cv::Mat grey, ycrcb, rgb;
  cv::cvtColor(all, grey, cv::COLOR_RGB2GRAY);
  cv::cvtColor(all, ycrcb, cv::COLOR_RGB2YCrCb);
  cv::cvtColor(all, rgb, cv::COLOR_YCrCb2RGB);  // the same bytes read as Y, Cr, Cb
  int bad_grey = 0, bad_ycrcb = 0, bad_rgb = 0;
  for (int i = 0; i < (1 << 24); ++i) {
    const int y = i >> 12, x = i & 4095;
    const int a = i >> 16, b = (i >> 8) & 255, c = i & 255;
    const rules::YCrCb t = rules::rgb_to_ycrcb(a, b, c);
    bad_grey += rules::rgb_to_grey(a, b, c) != grey.at<std::uint8_t>(y, x);
    const std::uint8_t* q = ycrcb.ptr<std::uint8_t>(y) + 3 * x;
    bad_ycrcb += t.y != q[0] || t.cr != q[1] || t.cb != q[2];
    const rules::Rgb u = rules::ycrcb_to_rgb(a, b, c);
    const std::uint8_t* s = rgb.ptr<std::uint8_t>(y) + 3 * x;
    bad_rgb += u.r != s[0] || u.g != s[1] || u.b != s[2];
  }
  CHECK(bad_grey == 0);
  CHECK(bad_ycrcb == 0);
  CHECK(bad_rgb == 0);
}

TEST_CASE("rules: reflect101 equals cv::borderInterpolate(BORDER_REFLECT_101)") {
  for (int n : {2, 3, 5, 17, 64})
    for (int i = -(n - 1); i <= 2 * n - 2; ++i)
      CHECK(rules::reflect101(i, n) == cv::borderInterpolate(i, n, cv::BORDER_REFLECT_101));
  CHECK(rules::reflect101(0, 1) == 0);
}

TEST_CASE("rules: he_lut_256 equals what cv::equalizeHist does to each present value") {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 40; ++trial) {
    // A histogram with gaps, big and small counts; an image holding exactly it.
    std::vector<std::uint32_t> hist(256, 0);
    const int low = static_cast<int>(rng() % 200), span = 1 + static_cast<int>(rng() % (256 - low));
    const int nonzero = 1 + static_cast<int>(rng() % 40);
    for (int k = 0; k < nonzero; ++k) hist[low + rng() % span] += 1 + rng() % (trial % 2 ? 5000 : 9);
    std::vector<std::uint8_t> pixels;
    for (int v = 0; v < 256; ++v) pixels.insert(pixels.end(), hist[v], static_cast<std::uint8_t>(v));
    cv::Mat img(1, static_cast<int>(pixels.size()), CV_8UC1, pixels.data()), eq;
    cv::equalizeHist(img, eq);
    std::uint8_t lut[256];
    rules::he_lut_256(hist.data(), lut);
    int bad = 0;
    for (std::size_t i = 0; i < pixels.size(); ++i) bad += lut[pixels[i]] != eq.at<std::uint8_t>(0, static_cast<int>(i));
    CHECK(bad == 0);
  }
}
#endif

TEST_CASE("rules: LUT rules equal the oracle for 256 and 4096 bins, integer and float") {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 30; ++trial) {
    for (int bins : {256, 4096}) {
      std::vector<std::uint32_t> hist(bins, 0);
      const int filled = trial == 0 ? 1 : 1 + static_cast<int>(rng() % (bins / 2));
      for (int k = 0; k < filled; ++k) hist[rng() % bins] += 1 + rng() % 1000;
      std::vector<float> smooth(bins);
      for (int i = 0; i < bins; ++i) smooth[i] = static_cast<float>(hist[i]) * 0.37f + (i % 7 == 0 ? 0.25f : 0.f);
      const int max_code = bins - 1;
      std::vector<std::uint16_t> lut(bins), lut_float(bins), lut_exact_float(bins);
      rules::he_lut(hist.data(), bins, max_code, lut.data());
      rules::he_lut_from_float(smooth.data(), bins, max_code, lut_float.data());
      std::vector<float> exact(hist.begin(), hist.end());
      rules::he_lut_from_float(exact.data(), bins, max_code, lut_exact_float.data());
      const std::vector<int> expected = oracle::he_lut(hist, max_code);
      const std::vector<int> expected_float = oracle::he_lut_float(smooth, max_code);
      int bad = 0, bad_float = 0, bad_exact = 0;
      for (int i = 0; i < bins; ++i) {
        bad += lut[i] != expected[i];
        bad_float += lut_float[i] != expected_float[i];
        bad_exact += lut_exact_float[i] != expected[i];  // integer-valued H: the same LUT
      }
      CHECK(bad == 0);
      CHECK(bad_float == 0);
      CHECK(bad_exact == 0);
    }
  }
  // A single value: the identity, whatever the bins.
  std::vector<std::uint32_t> single(4096, 0);
  single[1234] = 99;
  std::vector<std::uint16_t> lut(4096);
  rules::he_lut_4096(single.data(), lut.data());
  for (int i = 0; i < 4096; ++i) REQUIRE(lut[i] == i);
}

TEST_CASE("rules: round_saturate rounds half to even and clamps") {
  CHECK(rules::round_saturate(0.5f, 255) == 0);
  CHECK(rules::round_saturate(1.5f, 255) == 2);
  CHECK(rules::round_saturate(2.5f, 255) == 2);
  CHECK(rules::round_saturate(254.5f, 255) == 254);
  CHECK(rules::round_saturate(255.49f, 255) == 255);
  CHECK(rules::round_saturate(300.f, 255) == 255);
  CHECK(rules::round_saturate(-3.f, 255) == 0);
  CHECK(rules::round_saturate(4095.5f, 4095) == 4095);
}

TEST_CASE("rules: CLAHE closed form equals the literal clip and redistribution") {
  std::mt19937 rng(9);
  for (int trial = 0; trial < 400; ++trial) {
    const int side = 3 + 2 * static_cast<int>(rng() % 40);
    const int n = side * side;
    std::vector<std::uint32_t> hist(256, 0);
    const int spread = 1 + static_cast<int>(rng() % 256);
    const int base = static_cast<int>(rng() % (257 - spread));
    for (int k = 0; k < n; ++k) ++hist[base + rng() % spread];
    const float clip = (trial % 4 == 0) ? 0.5f : static_cast<float>(rng() % 400) / 40.f + 0.01f;
    const int limit = rules::clahe_clip_limit(clip, n);
    REQUIRE(limit >= 1);
    std::vector<std::uint32_t> clipped = hist;
    rules::clahe_clip_histogram(clipped.data(), limit);
    std::uint32_t excess = 0, below = 0, cdf = 0, total = 0;
    for (int i = 0; i < 256; ++i) excess += hist[i] > static_cast<std::uint32_t>(limit) ? hist[i] - limit : 0;
    int bad = 0;
    for (int v = 0; v < 256; ++v) {
      below += hist[v] < static_cast<std::uint32_t>(limit) ? hist[v] : limit;
      cdf += clipped[v];
      bad += rules::clahe_cdf(below, excess, v) != cdf;
    }
    for (std::uint32_t c : clipped) total += c;
    CHECK(bad == 0);
    CHECK(total == static_cast<std::uint32_t>(n));
  }
}

TEST_CASE("rules: clip limit, output code, limited range, radius") {
  CHECK(rules::clahe_clip_limit(0.f, 3969) == 0);
  CHECK(rules::clahe_clip_limit(2.f, 3969) == 31);   // int(2 * 3969 / 256) = int(31.0078)
  CHECK(rules::clahe_clip_limit(0.5f, 9) == 1);      // at least one
  CHECK(rules::clahe_clip_limit(40.f, 9) == 1);
  CHECK(rules::clahe_clip_limit(40.f, 3969) == 620);
  CHECK(rules::ahe_code(0, 9) == 0);
  CHECK(rules::ahe_code(9, 9) == 255);
  CHECK(rules::ahe_code(1, 9) == 28);                // (255 + 4) / 9
  CHECK(rules::ahe_code(std::int64_t{8191} * 8191, std::int64_t{8191} * 8191) == 255);
  CHECK(rules::limited_range_code(0) == 16);
  CHECK(rules::limited_range_code(255) == 235);
  CHECK(rules::limited_range_code(128) == 16 + (219 * 128 + 127) / 255);
  for (int e = 1; e < 256; ++e) REQUIRE(rules::limited_range_code(e) >= rules::limited_range_code(e - 1));
  CHECK(rules::ahe_radius(63, 1920, 1080) == 31);
  CHECK(rules::ahe_radius(63, 20, 10) == 9);
  CHECK(rules::ahe_radius_reduced(63, 20, 10));
  CHECK(!rules::ahe_radius_reduced(63, 1920, 1080));
  CHECK(rules::ahe_radius_reduced(21, 40, 10));   // 10 >= 10
  CHECK(!rules::ahe_radius_reduced(19, 40, 10));  // 9 < 10
  CHECK(rules::ahe_radius(3, 1, 1) == 0);
  CHECK(rules::bits_index(0xAB, 0xCD, 0xEF) == 0xACE);
  const rules::Rgb p = rules::bits_apply(0x123, 0xAB, 0xCD, 0xEF);
  CHECK(p.r == 0x1B);
  CHECK(p.g == 0x2D);
  CHECK(p.b == 0x3F);
  // he_temporal: one rounded product, then one fused multiply-add.
  CHECK(rules::he_temporal_update(0.25f, 100, 40.f) == std::fma(0.25f, 100.f, 0.75f * 40.f));
}
