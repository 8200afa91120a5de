// Global HE on the CPU against cv::equalizeHist and the naive oracle: every colour mode, every
// pixel format, he_temporal, ROI, and thread counts.
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>
#include <string>
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

Image run_he(const ImageView& in, ColorMode color, int threads, HeParams params = {}) {
  Image out(in.format, in.width, in.height, 32);
  cpu::HistogramEqualizer he(params, color, threads);
  he.process(in, out.view());
  return out;
}

oracle::Grey apply_lut(const oracle::Grey& g, const std::vector<int>& lut) {
  oracle::Grey out = g;
  for (std::uint8_t& p : out.pixels) p = static_cast<std::uint8_t>(lut[p]);
  return out;
}

Image gray_from(const oracle::Grey& g) {
  Image img(PixelFormat::gray8, g.width, g.height, 64);
  for (int y = 0; y < g.height; ++y)
    for (int x = 0; x < g.width; ++x)
      img.view().planes[0].data[static_cast<std::size_t>(y) * img.view().planes[0].stride + x] = g.at(x, y);
  return img;
}

// Grey test images of the degenerate and ordinary kinds.
struct GreyCase {
  std::string name;
  oracle::Grey image;
  bool changes;  // whether equalization must change some pixel
};

std::vector<GreyCase> grey_cases() {
  std::vector<GreyCase> cases;
  auto from_frame = [](const Image& f) { return channel_of(f.view(), 0); };
  cases.push_back({"1x1", from_frame(random_frame(PixelFormat::gray8, 1, 1, 1)), false});
  cases.push_back({"2x2", from_frame(random_frame(PixelFormat::gray8, 2, 2, 2, 40, 90)), true});
  cases.push_back({"3x2", from_frame(random_frame(PixelFormat::gray8, 3, 2, 3, 40, 90)), true});
  cases.push_back({"17x9", from_frame(random_frame(PixelFormat::gray8, 17, 9, 4, 30, 120)), true});
  cases.push_back({"200x120 random", from_frame(random_frame(PixelFormat::gray8, 200, 120, 5, 50, 140)), true});
  cases.push_back({"200x120 smooth", from_frame(smooth_frame(PixelFormat::gray8, 200, 120, 6)), true});
  cases.push_back({"1920x1080", from_frame(random_frame(PixelFormat::gray8, 1920, 1080, 7, 20, 230)), true});
  oracle::Grey constant = from_frame(random_frame(PixelFormat::gray8, 33, 7, 8));
  cases.push_back({"constant", constant_like(constant, 77), false});
  oracle::Grey two = constant_like(constant, 90);
  for (std::size_t i = 0; i < two.pixels.size(); i += 3) two.pixels[i] = 140;
  cases.push_back({"two values", two, true});
  oracle::Grey one = constant_like(constant, 200);
  one.pixels[17] = 12;
  cases.push_back({"one pixel differs", one, true});
  return cases;
}

}  // namespace

TEST_CASE("he: gray8 equals the naive oracle, and changes what it should") {
  for (const GreyCase& c : grey_cases()) {
    INFO(c.name);
    const Image in = gray_from(c.image);
    const oracle::Grey expected = oracle::he(c.image);
    for (int threads : {1, 2, 0}) {
      const oracle::Grey got = channel_of(run_he(in.view(), ColorMode::luma, threads).view(), 0);
      CHECK(count_differences(expected, got, c.name) == 0);
      CHECK((count_changed(c.image, got) > 0) == c.changes);
    }
  }
}

#ifdef HAZEFREE_HAVE_OPENCV
TEST_CASE("he: gray8 is bit-exact with cv::equalizeHist") {
  for (const GreyCase& c : grey_cases()) {
    INFO(c.name);
    cv::Mat expected;
    cv::equalizeHist(mat_of(c.image), expected);
    for (ColorMode mode : {ColorMode::luma, ColorMode::rgb, ColorMode::grey}) {
      const oracle::Grey got = channel_of(run_he(gray_from(c.image).view(), mode, 2).view(), 0);
      CHECK(count_differences(grey_of(expected), got, c.name) == 0);
    }
  }
}

TEST_CASE("he: rgb24 luma is OpenCV's YCrCb round trip with Y equalized") {
  for (const Image& in : frame_list(random_frame(PixelFormat::rgb24, 37, 23, 11, 30, 160),
                                    smooth_frame(PixelFormat::rgb24, 200, 120, 12),
                                    random_frame(PixelFormat::rgb24, 1, 1, 13))) {
    INFO(in.view().width << "x" << in.view().height);
    cv::Mat ycrcb;
    cv::cvtColor(mat_of_rgb24(in.view()), ycrcb, cv::COLOR_RGB2YCrCb);
    std::vector<cv::Mat> planes;
    cv::split(ycrcb, planes);
    cv::equalizeHist(planes[0].clone(), planes[0]);
    cv::merge(planes, ycrcb);
    cv::Mat expected;
    cv::cvtColor(ycrcb, expected, cv::COLOR_YCrCb2RGB);
    const Image out = run_he(in.view(), ColorMode::luma, 2);
    const cv::Mat got = mat_of_rgb24(out.view());
    CHECK(cv::norm(expected, got, cv::NORM_INF) == 0);
    if (in.view().width > 1) CHECK(cv::norm(mat_of_rgb24(in.view()), got, cv::NORM_INF) > 0);
  }
}

TEST_CASE("he: rgb24 grey is OpenCV's grey equalized, replicated") {
  const Image in = random_frame(PixelFormat::rgb24, 161, 147, 14, 20, 200);
  cv::Mat grey, expected;
  cv::cvtColor(mat_of_rgb24(in.view()), grey, cv::COLOR_RGB2GRAY);
  cv::equalizeHist(grey, expected);
  const Image out = run_he(in.view(), ColorMode::grey, 1);
  for (int c = 0; c < 3; ++c) CHECK(count_differences(grey_of(expected), channel_of(out.view(), 0, c), "grey") == 0);
  CHECK(count_changed(grey_of(grey), grey_of(expected)) > 0);
}

TEST_CASE("he: rgb24 rgb equalizes R, G and B independently") {
  for (const Image& in : frame_list(random_frame(PixelFormat::rgb24, 45, 31, 15, 20, 200),
                                    smooth_frame(PixelFormat::rgb24, 200, 120, 16))) {
    std::vector<cv::Mat> planes;
    cv::split(mat_of_rgb24(in.view()), planes);
    const Image out = run_he(in.view(), ColorMode::rgb, 2);
    for (int c = 0; c < 3; ++c) {
      cv::Mat expected;
      cv::equalizeHist(planes[c], expected);
      CHECK(count_differences(grey_of(expected), channel_of(out.view(), 0, c), "rgb") == 0);
      CHECK(count_changed(grey_of(planes[c]), channel_of(out.view(), 0, c)) > 0);
    }
  }
}
#endif

TEST_CASE("he: YUV luma and grey equalize Y (limited-range rule when limited)") {
  for (PixelFormat f : kYuvFormats)
    for (ColorRange range : {ColorRange::limited, ColorRange::full})
      for (ColorMode mode : {ColorMode::luma, ColorMode::grey})
        for (auto [w, h] : {std::pair{17, 9}, std::pair{3, 2}, std::pair{200, 120}}) {
          INFO(describe(f, w, h) << (range == ColorRange::limited ? " limited" : " full")
                                 << (mode == ColorMode::grey ? " grey" : " luma"));
          const Image in = random_frame(f, w, h, 20 + w, 40, 180, range);
          const Image out = run_he(in.view(), mode, 2);
          oracle::Grey expected = oracle::he(channel_of(in.view(), 0));
          if (range == ColorRange::limited) expected = map_codes(expected, oracle::limited_code);
          CHECK(count_differences(expected, channel_of(out.view(), 0), "Y") == 0);
          CHECK(count_changed(channel_of(in.view(), 0), channel_of(out.view(), 0)) > 0);
          check_chroma_of_luma_mode(in.view(), out.view(), mode);
          CHECK(out.view().range == range);
        }
}

TEST_CASE("he: YUV rgb equalizes the frame's RGB channels") {
  for (PixelFormat f : kYuvFormats) {
    INFO(to_string(f));
    const Image in = smooth_frame(f, 38, 22, 30);
    const int w = in.view().width, h = in.view().height;
    std::vector<std::uint8_t> r(w * h), g(w * h), b(w * h);
    cpu::frame_to_rgb_u8(in.view(), RgbPlanesU8{r.data(), g.data(), b.data(), w}, 1);
    std::vector<std::uint8_t>* planes[3] = {&r, &g, &b};
    for (auto* p : planes) {
      const oracle::Grey eq = oracle::he(oracle::Grey{w, h, *p});
      *p = eq.pixels;
    }
    Image expected(f, w, h, 16);
    expected.view().matrix = in.view().matrix;
    expected.view().range = in.view().range;
    cpu::rgb_u8_to_frame(RgbPlanesU8{r.data(), g.data(), b.data(), w}, expected.view(), 1);
    const Image out = run_he(in.view(), ColorMode::rgb, 2);
    require_same_frames(expected.view(), out.view(), "rgb");
    CHECK(count_changed(channel_of(in.view(), 0), channel_of(out.view(), 0)) > 0);
  }
}

namespace {

// The BITS filter straight from the report: 12-bit index of the high nibbles, 4096-bin LUT with
// 4095, the new index's nibbles over the old low nibbles.
void bits_oracle(std::vector<std::uint8_t>& r, std::vector<std::uint8_t>& g, std::vector<std::uint8_t>& b) {
  std::vector<std::uint32_t> hist(4096, 0);
  auto index = [&](std::size_t i) { return (r[i] >> 4) * 256 + (g[i] >> 4) * 16 + (b[i] >> 4); };
  for (std::size_t i = 0; i < r.size(); ++i) ++hist[index(i)];
  const std::vector<int> lut = oracle::he_lut(hist, 4095);
  for (std::size_t i = 0; i < r.size(); ++i) {
    const int k = lut[index(i)];
    r[i] = static_cast<std::uint8_t>((k / 256) * 16 + r[i] % 16);
    g[i] = static_cast<std::uint8_t>(((k / 16) % 16) * 16 + g[i] % 16);
    b[i] = static_cast<std::uint8_t>((k % 16) * 16 + b[i] % 16);
  }
}

}  // namespace

TEST_CASE("he: rgb-bits on rgb24, YUV and gray8") {
  for (PixelFormat f : kAllFormats)
    for (auto [w, h] : {std::pair{1, 1}, std::pair{29, 13}, std::pair{200, 120}}) {
      INFO(describe(f, w, h));
      const Image in = smooth_frame(f, w, h, 40 + w);
      std::vector<std::uint8_t> r(w * h), g(w * h), b(w * h);
      if (f == PixelFormat::rgb24) {
        for (int c = 0; c < 3; ++c) (c == 0 ? r : c == 1 ? g : b) = channel_of(in.view(), 0, c).pixels;
      } else if (f == PixelFormat::gray8) {
        r = g = b = channel_of(in.view(), 0).pixels;
      } else {
        cpu::frame_to_rgb_u8(in.view(), RgbPlanesU8{r.data(), g.data(), b.data(), w}, 1);
      }
      bits_oracle(r, g, b);
      Image expected(f, w, h, 16);
      expected.view().matrix = in.view().matrix;
      expected.view().range = in.view().range;
      if (f == PixelFormat::rgb24) {
        for (int y = 0; y < h; ++y)
          for (int x = 0; x < w; ++x) {
            std::uint8_t* d = expected.view().planes[0].data + y * expected.view().planes[0].stride + 3 * x;
            d[0] = r[y * w + x];
            d[1] = g[y * w + x];
            d[2] = b[y * w + x];
          }
      } else if (f == PixelFormat::gray8) {  // OpenCV 4's grey (15-bit weights) of the filtered colour
        for (int y = 0; y < h; ++y)
          for (int x = 0; x < w; ++x) {
            const int i = y * w + x;
            expected.view().planes[0].data[y * expected.view().planes[0].stride + x] =
                static_cast<std::uint8_t>((r[i] * 9798 + g[i] * 19235 + b[i] * 3735 + 16384) >> 15);
          }
      } else {
        cpu::rgb_u8_to_frame(RgbPlanesU8{r.data(), g.data(), b.data(), w}, expected.view(), 1);
      }
      for (int threads : {1, 2}) {
        const Image out = run_he(in.view(), ColorMode::rgb_bits, threads);
        require_same_frames(expected.view(), out.view(), "rgb-bits");
        if (w > 1) CHECK(count_changed(channel_of(in.view(), 0), channel_of(out.view(), 0)) > 0);
      }
    }
}

TEST_CASE("he: he_temporal follows the float recurrence over frames, and reset() forgets it") {
  const float a = 0.3f;
  HeParams params;
  params.temporal = a;
  for (ColorMode mode : {ColorMode::luma, ColorMode::rgb}) {
    INFO((mode == ColorMode::rgb ? "rgb" : "luma"));
    cpu::HistogramEqualizer he(params, mode, 2);
    const PixelFormat f = mode == ColorMode::rgb ? PixelFormat::rgb24 : PixelFormat::gray8;
    const int channels = mode == ColorMode::rgb ? 3 : 1;
    std::vector<std::vector<float>> smoothed(channels, std::vector<float>(256, 0.f));
    int frames_unlike_plain = 0;
    for (int n = 0; n < 5; ++n) {
      // Content that moves: the histogram differs from frame to frame.
      const Image in = n % 2 ? random_frame(f, 64, 40, 100 + n, 20 + 10 * n, 120 + 20 * n)
                             : smooth_frame(f, 64, 40, 100 + n);
      Image out(f, 64, 40, 32);
      he.process(in.view(), out.view());
      const Image plain = run_he(in.view(), ColorMode::rgb, 1);
      for (int c = 0; c < channels; ++c) {
        const oracle::Grey ch = channel_of(in.view(), 0, c);
        const std::vector<std::uint32_t> h = oracle::histogram(ch, 0, 0, ch.width, ch.height);
        for (int i = 0; i < 256; ++i)  // H_n = a h_n + (1 - a) H_{n-1}, H_1 = h_1, as one fma
          smoothed[c][i] = n == 0 ? static_cast<float>(h[i])
                                  : std::fma(a, static_cast<float>(h[i]), (1.f - a) * smoothed[c][i]);
        const oracle::Grey expected = apply_lut(ch, oracle::he_lut_float(smoothed[c], 255));
        CHECK(count_differences(expected, channel_of(out.view(), 0, c), "temporal") == 0);
        if (n == 0) CHECK(same(channel_of(plain.view(), 0, c), channel_of(out.view(), 0, c)));
        else frames_unlike_plain += !same(channel_of(plain.view(), 0, c), channel_of(out.view(), 0, c));
      }
    }
    CHECK(frames_unlike_plain > 0);
    he.reset();
    const Image in = random_frame(f, 64, 40, 200, 10, 90);
    Image out(f, 64, 40, 32);
    he.process(in.view(), out.view());
    require_same_frames(run_he(in.view(), mode, 1).view(), out.view(), "after reset");
  }
}

TEST_CASE("he: rgb-bits with he_temporal uses the 4096-bin float rule") {
  HeParams params;
  params.temporal = 0.5f;
  cpu::HistogramEqualizer he(params, ColorMode::rgb_bits, 1);
  std::vector<float> smoothed(4096, 0.f);
  for (int n = 0; n < 3; ++n) {
    const Image in = random_frame(PixelFormat::rgb24, 50, 30, 300 + n, 16 * n, 120 + 40 * n);
    Image out(PixelFormat::rgb24, 50, 30, 32);
    he.process(in.view(), out.view());
    std::vector<std::uint8_t> r = channel_of(in.view(), 0, 0).pixels, g = channel_of(in.view(), 0, 1).pixels,
                              b = channel_of(in.view(), 0, 2).pixels;
    std::vector<std::uint32_t> hist(4096, 0);
    for (std::size_t i = 0; i < r.size(); ++i) ++hist[(r[i] >> 4) * 256 + (g[i] >> 4) * 16 + (b[i] >> 4)];
    for (int i = 0; i < 4096; ++i)
      smoothed[i] = n == 0 ? static_cast<float>(hist[i])
                           : std::fma(0.5f, static_cast<float>(hist[i]), 0.5f * smoothed[i]);
    const std::vector<int> lut = oracle::he_lut_float(smoothed, 4095);
    for (std::size_t i = 0; i < r.size(); ++i) {
      const int k = lut[(r[i] >> 4) * 256 + (g[i] >> 4) * 16 + (b[i] >> 4)];
      const int x = static_cast<int>(i) % 50, y = static_cast<int>(i) / 50;
      const std::uint8_t* d = out.view().planes[0].data + y * out.view().planes[0].stride + 3 * x;
      REQUIRE(d[0] == (k / 256) * 16 + r[i] % 16);
      REQUIRE(d[1] == ((k / 16) % 16) * 16 + g[i] % 16);
      REQUIRE(d[2] == (k % 16) * 16 + b[i] % 16);
    }
  }
}

TEST_CASE("he: the ROI histogram drives the LUT of the whole frame") {
  // Letterbox: black bars top and bottom, picture between.
  const int w = 80, h = 60;
  Image in = smooth_frame(PixelFormat::gray8, w, h, 400);
  PlaneView& p = in.view().planes[0];
  for (int y = 0; y < h; ++y)
    if (y < 10 || y >= 50)
      for (int x = 0; x < w; ++x) p.data[y * p.stride + x] = 0;
  const oracle::Grey g = channel_of(in.view(), 0);

  struct RoiCase {
    Roi roi;
    int x0, y0, x1, y1;  // the rectangle the histogram must cover
  };
  for (const RoiCase& c : {RoiCase{{0, 10, 80, 40}, 0, 10, 80, 50},
                           RoiCase{{-5, 20, 30, 100}, 0, 20, 25, 60},    // clipped to the frame
                           RoiCase{{70, 55, 50, 50}, 70, 55, 80, 60},    // clipped at the far corner
                           RoiCase{{100, 100, 10, 10}, 0, 0, 80, 60},    // outside: whole frame
                           RoiCase{{10, 10, 0, 5}, 0, 0, 80, 60}}) {     // unset: whole frame
    INFO(c.roi.x << "," << c.roi.y << "," << c.roi.w << "," << c.roi.h);
    HeParams params;
    params.roi = c.roi;
    const oracle::Grey expected = apply_lut(g, oracle::he_lut(oracle::histogram(g, c.x0, c.y0, c.x1, c.y1), 255));
    for (int threads : {1, 2}) {
      const oracle::Grey got = channel_of(run_he(in.view(), ColorMode::luma, threads, params).view(), 0);
      CHECK(count_differences(expected, got, "roi") == 0);
    }
  }
  // The bars change the answer: the ROI result differs from the whole-frame one.
  HeParams params;
  params.roi = Roi{0, 10, 80, 40};
  CHECK(!same(channel_of(run_he(in.view(), ColorMode::luma, 1, params).view(), 0), oracle::he(g)));
}

TEST_CASE("he: output geometry must match the input") {
  const Image in = random_frame(PixelFormat::yuv420p, 16, 16, 500);
  Image out(PixelFormat::yuv420p, 16, 18);
  cpu::HistogramEqualizer he({}, ColorMode::luma, 1);
  CHECK_THROWS_AS(he.process(in.view(), out.view()), std::invalid_argument);
}

TEST_CASE("he: the ROI applies to each channel in rgb mode and to the BITS histogram") {
  const Image in = smooth_frame(PixelFormat::rgb24, 48, 36, 600);
  HeParams params;
  params.roi = Roi{8, 4, 20, 12};
  const Image out = run_he(in.view(), ColorMode::rgb, 2, params);
  for (int c = 0; c < 3; ++c) {
    const oracle::Grey ch = channel_of(in.view(), 0, c);
    const oracle::Grey expected = apply_lut(ch, oracle::he_lut(oracle::histogram(ch, 8, 4, 28, 16), 255));
    CHECK(count_differences(expected, channel_of(out.view(), 0, c), "rgb roi") == 0);
    CHECK(!same(expected, oracle::he(ch)));
  }
  const Image bits = run_he(in.view(), ColorMode::rgb_bits, 2, params);
  std::vector<std::uint32_t> hist(4096, 0);
  const oracle::Grey r = channel_of(in.view(), 0, 0), g = channel_of(in.view(), 0, 1), b = channel_of(in.view(), 0, 2);
  for (int y = 4; y < 16; ++y)
    for (int x = 8; x < 28; ++x) ++hist[(r.at(x, y) >> 4) * 256 + (g.at(x, y) >> 4) * 16 + (b.at(x, y) >> 4)];
  const std::vector<int> lut = oracle::he_lut(hist, 4095);
  int bad = 0;
  for (int y = 0; y < 36; ++y)
    for (int x = 0; x < 48; ++x) {
      const int k = lut[(r.at(x, y) >> 4) * 256 + (g.at(x, y) >> 4) * 16 + (b.at(x, y) >> 4)];
      const std::uint8_t* d = bits.view().planes[0].data + y * bits.view().planes[0].stride + 3 * x;
      bad += d[0] != (k / 256) * 16 + r.at(x, y) % 16 || d[1] != ((k / 16) % 16) * 16 + g.at(x, y) % 16 ||
             d[2] != (k % 16) * 16 + b.at(x, y) % 16;
    }
  CHECK(bad == 0);
}
