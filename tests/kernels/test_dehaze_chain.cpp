// The whole dark channel prior chain: against the double oracle, on every frame format, thread
// independence, dehazing quality on real photographs with synthetic haze, the atmospheric light
// over a sequence, and parameter validation.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/color_convert.hpp"
#include "kernels/dehaze.hpp"
#include "kernels/dcp_rules.hpp"
#include "kernels/dehaze_ops.hpp"
#include "kernels/temporal_state.hpp"
#include "oracles/dehaze_oracle.hpp"
#include "oracles/image_metrics.hpp"
#include "support/dcp_test_support.hpp"

using namespace hazefree;

namespace {

Image rgb_frame(const test::Rgb8& img) {
  Image f(PixelFormat::rgb24, img.w, img.h);
  test::copy_into(img, f.view());
  return f;
}

test::Rgb8 random_rgb(int w, int h, unsigned seed) {
  test::Rgb8 img{w, h, std::vector<std::uint8_t>(static_cast<std::size_t>(w) * h * 3)};
  std::mt19937 rng(seed);
  for (auto& v : img.px) v = static_cast<std::uint8_t>(rng() % 256);
  return img;
}

// Haze model I = J t + A (1 - t) with a vertical depth ramp: t = 0.85 at the bottom row down to
// 0.25 at the top.
test::Rgb8 add_haze(const test::Rgb8& clean, const std::array<double, 3>& a) {
  test::Rgb8 out = clean;
  for (int y = 0; y < clean.h; ++y) {
    const double t = 0.25 + 0.6 * y / std::max(1, clean.h - 1);
    for (int x = 0; x < clean.w; ++x)
      for (int c = 0; c < 3; ++c) {
        const double v = clean.at(x, y)[c] / 255.0 * t + a[c] * (1 - t);
        out.at(x, y)[c] = static_cast<std::uint8_t>(std::lround(std::clamp(v, 0.0, 1.0) * 255));
      }
  }
  return out;
}

// A night-time version of a picture (a quarter of the light).
test::Rgb8 darken(test::Rgb8 img) {
  for (auto& v : img.px) v = static_cast<std::uint8_t>(v / 4);
  return img;
}

oracle::RgbD to_rgbd(const test::Rgb8& img) {
  oracle::RgbD out{oracle::Grid<double>(img.w, img.h), oracle::Grid<double>(img.w, img.h),
                   oracle::Grid<double>(img.w, img.h)};
  for (int y = 0; y < img.h; ++y)
    for (int x = 0; x < img.w; ++x)
      for (int c = 0; c < 3; ++c) out[c].at(x, y) = img.at(x, y)[c] / 255.0;
  return out;
}

// Dehazes an rgb24 picture with the product and with the oracle (given the product's A, which is
// compared with the oracle's ranking exactly); returns the largest code difference.
int chain_difference(const test::Rgb8& img, const DcpParams& p, double* share_off = nullptr) {
  Image in = rgb_frame(img), out(PixelFormat::rgb24, img.w, img.h);
  cpu::Dehazer dehazer(p, 2);
  dehazer.process(in.view(), out.view());
  const test::Rgb8 got = test::copy_from(out.view());

  const auto rgb = test::to_float_rgb(img);
  const oracle::AtmosphereResult ref =
      oracle::atmosphere(oracle::patch_min(oracle::channel_min(rgb), p.patch_radius),
                         oracle::grey_of(rgb), rgb, p.a_top_fraction);
  const std::array<float, 3> a = dehazer.atmospheric_light();
  for (int c = 0; c < 3; ++c) CHECK(a[c] == static_cast<float>(ref.a[c]));
  const auto j = oracle::recover_with(rgb, {a[0], a[1], a[2]}, test::oracle_params(p));
  int worst = 0, off = 0;
  for (int y = 0; y < img.h; ++y)
    for (int x = 0; x < img.w; ++x)
      for (int c = 0; c < 3; ++c) {
        const int expected = static_cast<int>(std::floor(j[c].at(x, y) * 255 + 0.5));
        const int d = std::abs(expected - got.at(x, y)[c]);
        worst = std::max(worst, d);
        off += d > 0;
      }
  if (share_off) *share_off = static_cast<double>(off) / (3.0 * img.w * img.h);
  return worst;
}

}  // namespace

TEST_CASE("dehaze chain matches the double oracle within one code") {
  const test::Rgb8 photo = test::load_sample_rgb("coffee.png");
  REQUIRE_MESSAGE(photo.w > 0, "samples/images/coffee.png is missing");
  const test::Rgb8 hazy = add_haze(photo, {0.85, 0.87, 0.9});
  DcpParams p;
  struct Case {
    test::Rgb8 img;
    int gf_radius, subsample;
  };
  const Case cases[] = {{random_rgb(1, 1, 1), 32, 1},    {random_rgb(2, 2, 2), 32, 1},
                        {random_rgb(3, 2, 3), 1, 1},     {random_rgb(17, 9, 4), 4, 1},
                        {test::crop(hazy, 37, 51, 161, 97), 32, 1},
                        {test::crop(hazy, 0, 0, 200, 130), 16, 4},
                        {test::crop(hazy, 5, 200, 99, 67), 32, 3}};
  for (const Case& c : cases) {
    p.gf_radius = c.gf_radius;
    p.gf_subsample = c.subsample;
    double share = 0.0;
    const int worst = chain_difference(c.img, p, &share);
    INFO(c.img.w << "x" << c.img.h << " gf_radius=" << c.gf_radius << " s=" << c.subsample);
    MESSAGE("chain " << c.img.w << "x" << c.img.h << ": max code difference " << worst
                     << ", share of codes off " << share);
    CHECK(worst <= 1);
    CHECK(share <= 0.01);
  }
}

TEST_CASE("dehaze chain: the same bytes with 1, 2 and all threads, every format") {
  const test::Rgb8 photo = test::load_sample_rgb("astronaut.png");
  REQUIRE_MESSAGE(photo.w > 0, "samples/images/astronaut.png is missing");
  const test::Rgb8 img = test::crop(photo, 13, 7, 301, 203);
  Image rgb = rgb_frame(img);
  for (PixelFormat format : {PixelFormat::yuv420p, PixelFormat::yuv422p, PixelFormat::yuv444p,
                             PixelFormat::nv12, PixelFormat::gray8, PixelFormat::rgb24}) {
    Image in(format, img.w, img.h);
    {  // the picture in this format
      std::vector<std::uint8_t> r(img.w * img.h), g(r.size()), b(r.size());
      for (std::size_t i = 0; i < r.size(); ++i) {
        r[i] = img.px[3 * i];
        g[i] = img.px[3 * i + 1];
        b[i] = img.px[3 * i + 2];
      }
      cpu::rgb_u8_to_frame({r.data(), g.data(), b.data(), img.w}, in.view(), 1);
    }
    for (int subsample : {1, 4}) {
      DcpParams p;
      p.gf_subsample = subsample;
      Image o1(format, img.w, img.h), o2(format, img.w, img.h), o0(format, img.w, img.h);
      cpu::Dehazer d1(p, 1), d2(p, 2), d0(p, 0);
      d1.process(in.view(), o1.view());
      d2.process(in.view(), o2.view());
      d0.process(in.view(), o0.view());
      const std::size_t bytes = frame_bytes(format, img.w, img.h, 64);
      INFO(to_string(format) << " subsample " << subsample);
      CHECK(std::equal(o1.view().planes[0].data, o1.view().planes[0].data + bytes, o2.view().planes[0].data));
      CHECK(std::equal(o1.view().planes[0].data, o1.view().planes[0].data + bytes, o0.view().planes[0].data));
      CHECK(d1.atmospheric_light() == d2.atmospheric_light());
    }
  }
}

TEST_CASE("dehaze chain on tiny frames of every format") {
  for (PixelFormat format : {PixelFormat::yuv420p, PixelFormat::yuv422p, PixelFormat::yuv444p,
                             PixelFormat::nv12, PixelFormat::gray8, PixelFormat::rgb24})
    for (auto [w, h] : {std::pair{1, 1}, {2, 2}, {3, 2}, {17, 9}}) {
      Image in(format, w, h), out(format, w, h);
      std::mt19937 rng(w * 100 + h);
      for (int i = 0; i < in.view().plane_count; ++i) {
        const PlaneView& pl = in.view().planes[i];
        for (int y = 0; y < pl.height; ++y)
          for (int x = 0; x < pl.width * bytes_per_sample(format, i); ++x)
            pl.data[y * pl.stride + x] = static_cast<std::uint8_t>(100 + rng() % 100);
      }
      cpu::Dehazer dehazer(DcpParams{}, 2);
      dehazer.process(in.view(), out.view());
      for (float a : dehazer.atmospheric_light()) {
        CHECK(a >= 1.0f / 255.0f);
        CHECK(a <= 1.0f);
      }
    }
}

TEST_CASE("dehazed photographs are closer to the haze-free originals") {
  for (const char* name : {"coffee.png", "astronaut.png"}) {
    const test::Rgb8 clean = test::load_sample_rgb(name);
    REQUIRE_MESSAGE(clean.w > 0, "samples/images/" << std::string(name) << " is missing");
    const test::Rgb8 hazy = add_haze(clean, {0.85, 0.87, 0.9});
    for (float brightness : {0.0f, 0.2f}) {
      DcpParams p;
      p.brightness = brightness;
      Image in = rgb_frame(hazy), out(PixelFormat::rgb24, clean.w, clean.h);
      cpu::Dehazer dehazer(p, 0);
      dehazer.process(in.view(), out.view());
      const oracle::RgbD truth = to_rgbd(clean), before = to_rgbd(hazy),
                         after = to_rgbd(test::copy_from(out.view()));
      const double psnr_before = oracle::psnr(truth, before), psnr_after = oracle::psnr(truth, after);
      const double ssim_before = oracle::ssim(truth, before), ssim_after = oracle::ssim(truth, after);
      MESSAGE(std::string(name) << " brightness " << brightness << ": PSNR " << psnr_before << " -> " << psnr_after
                   << " dB, SSIM " << ssim_before << " -> " << ssim_after);
      CHECK(psnr_after >= psnr_before + 3.0);
      CHECK(ssim_after >= ssim_before + 0.05);
    }
  }
}

TEST_CASE("atmospheric light over a sequence: bounded steps, a real cut resets, reset() clears") {
  const test::Rgb8 clean = test::load_sample_rgb("coffee.png");
  REQUIRE_MESSAGE(clean.w > 0, "samples/images/coffee.png is missing");
  const test::Rgb8 base = test::crop(clean, 0, 0, 256, 192);
  DcpParams p;
  cpu::Dehazer dehazer(p, 2);
  Image out(PixelFormat::rgb24, base.w, base.h);
  std::array<float, 3> previous{};
  int cuts = 0, limited = 0;
  for (int n = 0; n < 16; ++n) {
    // The airlight drifts by 0.04 per frame (its estimate by more than a_max_step / a_smoothing);
    // frame 11 is another scene.
    const double drift = 0.5 + 0.04 * std::min(n, 10);
    test::Rgb8 frame = n < 11 ? add_haze(base, {drift, drift + 0.02, drift + 0.04})
                              : add_haze(darken(test::crop(clean, 300, 200, 256, 192)), {0.2, 0.25, 0.3});
    Image in = rgb_frame(frame);
    dehazer.process(in.view(), out.view());
    const std::array<float, 3> a = dehazer.atmospheric_light(), est = dehazer.atmospheric_estimate();
    if (n == 0) {
      CHECK(a == est);
    } else {
      const float change = (std::fabs(est[0] - previous[0]) + std::fabs(est[1] - previous[1]) +
                            std::fabs(est[2] - previous[2])) / 3.0f;
      if (change > p.a_scene_cut) {
        ++cuts;
        CHECK(n == 11);  // only the real cut
        CHECK(a == est);
      } else {
        for (int c = 0; c < 3; ++c) {
          CHECK(std::fabs(a[c] - previous[c]) <= p.a_max_step * 1.0001f);
          limited += std::fabs(a[c] - previous[c]) >= p.a_max_step * 0.999f;
        }
      }
    }
    previous = a;
  }
  CHECK(cuts == 1);
  CHECK(limited > 0);  // the drift did hit the step limit
  dehazer.reset();
  CHECK(dehazer.atmospheric_light() == std::array<float, 3>{0.f, 0.f, 0.f});
  Image in = rgb_frame(add_haze(base, {0.9, 0.9, 0.9}));
  dehazer.process(in.view(), out.view());
  CHECK(dehazer.atmospheric_light() == dehazer.atmospheric_estimate());
}

TEST_CASE("dehazer rejects out-of-range parameters and mismatched frames") {
  auto rejects = [](auto change) {
    DcpParams p;
    change(p);
    CHECK_THROWS_AS(cpu::Dehazer(p, 1), std::invalid_argument);
  };
  rejects([](DcpParams& p) { p.patch_radius = -1; });
  rejects([](DcpParams& p) { p.omega = 0.f; });
  rejects([](DcpParams& p) { p.omega = 1.5f; });
  rejects([](DcpParams& p) { p.a_top_fraction = 0.f; });
  rejects([](DcpParams& p) { p.a_smoothing = 0.f; });
  rejects([](DcpParams& p) { p.a_max_step = -0.1f; });
  rejects([](DcpParams& p) { p.a_scene_cut = -1.f; });
  rejects([](DcpParams& p) { p.gf_radius = 0; });
  rejects([](DcpParams& p) { p.gf_eps = 0.f; });
  rejects([](DcpParams& p) { p.gf_subsample = 0; });
  rejects([](DcpParams& p) { p.k_tolerance = -1.f; });
  rejects([](DcpParams& p) { p.t0 = 0.f; });
  rejects([](DcpParams& p) { p.brightness = 1.5f; });
  CHECK_THROWS_AS(cpu::Dehazer(DcpParams{}, -1), std::invalid_argument);
  cpu::Dehazer dehazer(DcpParams{}, 1);
  Image a(PixelFormat::yuv420p, 16, 16), b(PixelFormat::yuv444p, 16, 16), c(PixelFormat::yuv420p, 18, 16);
  CHECK_THROWS_AS(dehazer.process(a.view(), b.view()), std::invalid_argument);
  CHECK_THROWS_AS(dehazer.process(a.view(), c.view()), std::invalid_argument);
}

// ---- haze index and auto strength (SPEC 13) -------------------------------------------------

namespace {

struct HazeRun {
  float index = 0.f, omega = 0.f;
  double psnr_to_input = 0.0;
  test::Rgb8 out;
};

HazeRun dehaze_once(const test::Rgb8& img, bool auto_strength) {
  DcpParams p;
  p.auto_strength = auto_strength;
  Image in = rgb_frame(img), out(PixelFormat::rgb24, img.w, img.h);
  cpu::Dehazer dehazer(p, 2);
  dehazer.process(in.view(), out.view());
  HazeRun r;
  r.index = dehazer.haze_index();
  r.omega = dehazer.omega_used();
  r.out = test::copy_from(out.view());
  r.psnr_to_input = oracle::psnr(to_rgbd(img), to_rgbd(r.out));
  return r;
}

}  // namespace

TEST_CASE("haze index: the rules count exactly and read the 5th and 25th percentiles over the mean light") {
  std::array<unsigned, dcp::kHazeBins> histogram{};
  CHECK(dcp::haze_bin(-0.5f) == 0);
  CHECK(dcp::haze_bin(0.0f) == 0);
  CHECK(dcp::haze_bin(1.0f / 256.0f) == 1);
  CHECK(dcp::haze_bin(0.75f) == 192);
  CHECK(dcp::haze_bin(0.999f) == dcp::kHazeBins - 2);
  CHECK(dcp::haze_bin(1.0f) == dcp::kHazeBins - 1);
  // 100 pixels: 4 at 0, 6 at bin 20, 90 at bin 40: the 5th lies in bin 20, the 25th in bin 40.
  histogram[0] = 4;
  histogram[20] = 6;
  histogram[40] = 90;
  const float light[3] = {0.8f, 0.8f, 0.8f};
  CHECK(dcp::haze_estimate(histogram.data(), 100, light) == doctest::Approx((20.0 + 4.0) / 256.0 / 0.8).epsilon(1e-6));
  histogram[0] = 25;
  histogram[40] = 69;
  CHECK(dcp::haze_estimate(histogram.data(), 100, light) == 0.0f);
  // The response: none below the clear threshold, all from the dense one on, monotone between.
  CHECK(dcp::auto_strength(true, 0.0f) == 0.0f);
  CHECK(dcp::auto_strength(true, dcp::kHazeClear) == 0.0f);
  CHECK(dcp::auto_strength(true, dcp::kHazeDense) == 1.0f);
  CHECK(dcp::auto_strength(false, 0.0f) == 1.0f);
  float last = 0.f;
  for (float h = dcp::kHazeClear; h <= dcp::kHazeDense; h += 0.005f) {
    const float s = dcp::auto_strength(true, h);
    CHECK(s >= last);
    last = s;
  }
}

TEST_CASE("haze index over time: slow inside the response's band, a tenth of the way outside it") {
  // A 60 % veil (h^ 0.62, the index up to 1 now that the histogram reaches D = 1) that clears
  // (h^ 0.006): the index leaves the dense side in well under a second at 25 fps, and crosses
  // the band, where the strength changes, by at most kHazeMaxStep a frame.
  CHECK(dcp::haze_bin(0.62f) == 158);
  float h = dcp::next_haze_index(true, 0.0f, 0.62f);
  CHECK(h == 0.62f);
  int frames = 0, frames_in_band = 0;
  float strength = dcp::auto_strength(true, h);
  while (h > 0.01f && frames < 1000) {
    const float next = dcp::next_haze_index(false, h, 0.006f);
    CHECK(next < h);
    if (h <= dcp::kHazeDense + 1e-6f && next >= dcp::kHazeClear - 1e-6f) CHECK(h - next <= dcp::kHazeMaxStep * 1.0001f);
    const float s = dcp::auto_strength(true, next);
    CHECK(strength - s <= 0.1f);  // smoothstep's steepest: 1.5 / 0.04 * 0.0025 = 0.094 a frame
    strength = s;
    if (next < dcp::kHazeDense && next > dcp::kHazeClear) ++frames_in_band;
    if (s > 0.0f) ++frames;
    h = next;
  }
  MESSAGE("clearing from 0.62: strength above none for " << frames << " frames, " << frames_in_band << " in the band");
  CHECK(frames_in_band >= 14);  // 0.04 / 0.0025 = 16 steps
  CHECK(frames_in_band <= 17);
  CHECK(frames <= 40);          // 19 frames to reach the band, 16 across it (7 s before the band rule)
  // Rising from clear into dense haze: the band again takes 16 frames, then a tenth of the way.
  h = 0.0f;
  frames_in_band = 0;
  for (int n = 0; n < 200; ++n) {
    const float next = dcp::next_haze_index(false, h, 0.3f);
    CHECK(next >= h);
    if (next > dcp::kHazeClear && h < dcp::kHazeDense) CHECK(next - std::max(h, dcp::kHazeClear) <= dcp::kHazeMaxStep * 1.0001f);
    if (next < dcp::kHazeDense && next > dcp::kHazeClear) ++frames_in_band;
    h = next;
  }
  CHECK(frames_in_band >= 14);
  CHECK(frames_in_band <= 17);
  CHECK(h == doctest::Approx(0.3f).epsilon(1e-3));
  // Below the band or above it, the frame-to-frame noise is a tenth of the raw index's.
  CHECK(dcp::next_haze_index(false, 0.01f, 0.02f) == doctest::Approx(0.011f));
  CHECK(dcp::next_haze_index(false, 0.2f, 0.1f) == doctest::Approx(0.19f));
  // A cut takes the raw index.
  CHECK(dcp::next_haze_index(true, 0.5f, 0.01f) == 0.01f);
}

TEST_CASE("haze index equals an independent percentile of the dark channel (within one bin)") {
  for (const char* name : {"coffee.png", "astronaut.png"}) {
    const test::Rgb8 clean = test::load_sample_rgb(name);
    REQUIRE_MESSAGE(clean.w > 0, "samples/images/" << std::string(name) << " is missing");
    for (const test::Rgb8& img : {clean, add_haze(clean, {0.86, 0.87, 0.89})}) {
      const HazeRun run = dehaze_once(img, false);
      const auto rgb = test::to_float_rgb(img);
      const oracle::Grid<float> dark = oracle::patch_min(oracle::channel_min(rgb), 7);
      std::vector<float> values;
      for (int y = 0; y < img.h; ++y)
        for (int x = 0; x < img.w; ++x) values.push_back(dark.at(x, y));
      std::sort(values.begin(), values.end());
      const double veil = values[(values.size() * 5 + 99) / 100 - 1] + 0.1 * values[(values.size() * 25 + 99) / 100 - 1];
      const oracle::AtmosphereResult a =
          oracle::atmosphere(dark, oracle::grey_of(rgb), rgb, DcpParams{}.a_top_fraction);
      const double expected = std::min(1.0, veil / ((a.a[0] + a.a[1] + a.a[2]) / 3.0));
      MESSAGE(std::string(name) << ": index " << run.index << ", percentile " << expected);
      CHECK(std::fabs(run.index - expected) <= 1.1 / 256.0 / ((a.a[0] + a.a[1] + a.a[2]) / 3.0) + 1e-6);
    }
  }
}

TEST_CASE("auto strength: clear pictures pass within 30 dB, hazy ones are dehazed as with the fixed strength") {
  for (const char* name : {"coffee.png", "astronaut.png"}) {
    const test::Rgb8 clean = test::load_sample_rgb(name);
    REQUIRE_MESSAGE(clean.w > 0, "samples/images/" << std::string(name) << " is missing");
    const HazeRun clear_fixed = dehaze_once(clean, false), clear_auto = dehaze_once(clean, true);
    const test::Rgb8 hazy = add_haze(clean, {0.86, 0.87, 0.89});
    const HazeRun hazy_fixed = dehaze_once(hazy, false), hazy_auto = dehaze_once(hazy, true);
    const double restored_fixed = oracle::psnr(to_rgbd(clean), to_rgbd(hazy_fixed.out));
    const double restored_auto = oracle::psnr(to_rgbd(clean), to_rgbd(hazy_auto.out));
    MESSAGE(std::string(name) << ": clear h " << clear_auto.index << ", PSNR to input fixed " << clear_fixed.psnr_to_input
                 << " auto " << clear_auto.psnr_to_input << "; hazy h " << hazy_auto.index << " omega "
                 << hazy_auto.omega << ", restored fixed " << restored_fixed << " auto " << restored_auto);
    CHECK(clear_auto.index < dcp::kHazeClear);
    CHECK(hazy_auto.index > dcp::kHazeDense);
    CHECK(clear_auto.omega == 0.0f);
    CHECK(clear_auto.psnr_to_input >= 30.0);
    CHECK(clear_fixed.psnr_to_input < 30.0);  // what auto strength avoids
    CHECK(restored_auto >= restored_fixed - 0.5);
    CHECK(hazy_fixed.omega == DcpParams{}.omega);
  }
}

TEST_CASE("haze index over a sequence: the jobs' scan of the estimates gives the tracker's values exactly") {
  const test::Rgb8 clean = test::load_sample_rgb("coffee.png");
  REQUIRE_MESSAGE(clean.w > 0, "samples/images/coffee.png is missing");
  ProcessingConfig config;
  config.dcp.auto_strength = true;
  cpu::Dehazer dehazer(config.dcp, 2), estimator(config.dcp, 1);
  TemporalState scanned;
  Image out(PixelFormat::rgb24, clean.w, clean.h);
  for (int n = 0; n < 12; ++n) {
    // Fog thickening, then a clear cut (frame 8).
    const double a = 0.3 + 0.05 * n;
    const test::Rgb8 frame = n < 8 ? add_haze(clean, {a, a, a}) : clean;
    Image in = rgb_frame(frame);
    FrameEstimate e;
    e.light = estimator.estimate(in.view());
    e.haze = estimator.haze_estimate();
    advance_temporal_state(config, e, scanned);
    dehazer.process(in.view(), out.view());
    CHECK(scanned.haze == dehazer.haze_index());
    CHECK(scanned.light == dehazer.atmospheric_light());
  }
}
