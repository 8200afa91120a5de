// Atmospheric light: the block-max estimate against a ranking by sorting (exact), its tie rules,
// and the inter-frame constraint.
#include <doctest/doctest.h>

#include <cmath>

#include "kernels/dcp_rules.hpp"
#include "kernels/dehaze_ops.hpp"
#include "oracles/dehaze_oracle.hpp"
#include "support/dcp_test_support.hpp"

using namespace hazefree;

namespace {

struct Scene {
  std::array<oracle::Grid<float>, 3> rgb;
  oracle::Grid<float> grey, dark;
};

Scene random_scene(int w, int h, unsigned seed, int levels, int r) {
  Scene s;
  for (int c = 0; c < 3; ++c) s.rgb[c] = test::random_grid(w, h, seed * 3 + c, levels);
  s.grey = oracle::grey_of(s.rgb);
  s.dark = oracle::patch_min(oracle::channel_min(s.rgb), r);
  return s;
}

std::array<float, 3> product_estimate(const Scene& s, float fraction, int threads,
                                      cpu::AtmosphereEstimator& est) {
  test::OwnedPlane d = test::to_plane(s.dark), g = test::to_plane(s.grey);
  test::OwnedPlane r = test::to_plane(s.rgb[0]), gg = test::to_plane(s.rgb[1]),
                   b = test::to_plane(s.rgb[2]);
  const RgbPlanesF rgb{r.plane.data, gg.plane.data, b.plane.data, r.plane.stride};
  return est.estimate(d.plane, g.plane, rgb, fraction, threads);
}

void check_against_oracle(const Scene& s, float fraction, int threads) {
  cpu::AtmosphereEstimator est;
  const std::array<float, 3> a = product_estimate(s, fraction, threads, est);
  const oracle::AtmosphereResult ref = oracle::atmosphere(s.dark, s.grey, s.rgb, fraction);
  INFO(s.dark.w << "x" << s.dark.h << " fraction=" << fraction);
  REQUIRE(est.used_blocks() == static_cast<int>(ref.positions.size()));
  for (int k = 0; k < est.used_blocks(); ++k) {
    CHECK(est.ranked_blocks()[k].x == ref.positions[k][0]);
    CHECK(est.ranked_blocks()[k].y == ref.positions[k][1]);
  }
  for (std::size_t k = 0; k < ref.block_order.size(); ++k)
    CHECK(est.ranked_blocks()[k].index == ref.block_order[k]);
  // Same positions; the means agree to the float rounding of a double mean.
  for (int c = 0; c < 3; ++c) CHECK(a[c] == static_cast<float>(ref.a[c]));
}

}  // namespace

TEST_CASE("atmospheric light equals the sorted ranking on a table of sizes") {
  const int sizes[][2] = {{1, 1}, {2, 2}, {3, 2}, {17, 9}, {32, 32}, {33, 33}, {65, 31}, {100, 70}, {250, 97}};
  for (const auto& sz : sizes)
    for (float fraction : {0.01f, 0.1f, 0.5f, 1.0f}) {
      check_against_oracle(random_scene(sz[0], sz[1], sz[0] + sz[1], 0, 2), fraction, 2);
      check_against_oracle(random_scene(sz[0], sz[1], sz[0] * sz[1], 3, 1), fraction, 1);
    }
}

TEST_CASE("atmospheric light on a 1920x1080 frame, any thread count") {
  const Scene s = random_scene(1920, 1080, 4, 16, 7);
  for (int threads : {1, 2, 0}) check_against_oracle(s, 0.01f, threads);
}

TEST_CASE("atmospheric light tie rules") {
  // One 64x32 image = two blocks, constant dark channel: the pixel with the larger grey wins in
  // each block; among full ties the first in raster order.
  Scene s;
  for (int c = 0; c < 3; ++c) s.rgb[c] = oracle::Grid<float>(64, 32, 0.5f);
  s.dark = oracle::Grid<float>(64, 32, 0.5f);
  s.grey = oracle::Grid<float>(64, 32, 0.3f);
  s.grey.at(5, 7) = 0.4f;   // block 0: grey decides
  s.grey.at(40, 3) = 0.4f;  // block 1: same grey as block 0's winner ...
  s.grey.at(50, 3) = 0.4f;  // ... and a full tie later in raster order
  s.rgb[0].at(5, 7) = 0.9f;
  cpu::AtmosphereEstimator est;
  std::array<float, 3> a = product_estimate(s, 0.01f, 2, est);
  REQUIRE(est.used_blocks() == 1);
  CHECK(est.ranked_blocks()[0].index == 0);  // equal max and grey: lower block index first
  CHECK(est.ranked_blocks()[0].x == 5);
  CHECK(est.ranked_blocks()[0].y == 7);
  CHECK(est.ranked_blocks()[1].x == 40);
  CHECK(est.ranked_blocks()[1].y == 3);
  CHECK(a[0] == 0.9f);
  // A darker image: each channel is clamped to >= 1/255.
  for (int c = 0; c < 3; ++c) s.rgb[c] = oracle::Grid<float>(64, 32, 0.f);
  a = product_estimate(s, 1.0f, 1, est);
  for (float v : a) CHECK(v == dcp::kMinAtmosphere);
}

TEST_CASE("atmosphere top count is max(1, ceil(fraction * blocks))") {
  CHECK(dcp::atmosphere_top_count(1, 0.01f) == 1);
  CHECK(dcp::atmosphere_top_count(2040, 0.01f) == 21);  // 1080p: 60 x 34 blocks
  CHECK(dcp::atmosphere_top_count(100, 0.07f) == 7);
  CHECK(dcp::atmosphere_top_count(100, 1.0f) == 100);
  CHECK(dcp::atmosphere_top_count(3, 0.5f) == 2);
}

TEST_CASE("inter-frame constraint: smoothing, max step, scene cut, reset") {
  DcpParams p;  // a_smoothing 0.8, a_max_step 5/255, a_scene_cut 0.2
  cpu::AtmosphereTracker tracker(p);
  std::array<float, 3> a = tracker.update({0.8f, 0.7f, 0.6f});
  CHECK(tracker.last_was_cut());
  CHECK(a == std::array<float, 3>{0.8f, 0.7f, 0.6f});
  // A small change: 0.8 of the way.
  a = tracker.update({0.81f, 0.7f, 0.6f});
  CHECK_FALSE(tracker.last_was_cut());
  CHECK(a[0] == doctest::Approx(0.808f).epsilon(1e-6));
  // A larger change below the cut: limited to a_max_step per channel.
  const std::array<float, 3> before = a;
  a = tracker.update({0.95f, 0.6f, 0.6f});
  CHECK(a[0] == doctest::Approx(before[0] + p.a_max_step).epsilon(1e-6));
  CHECK(a[1] == doctest::Approx(before[1] - p.a_max_step).epsilon(1e-6));
  CHECK(a[2] == before[2]);
  // A cut: mean |change| > 0.2 takes the estimate as it is.
  a = tracker.update({0.2f, 0.2f, 0.2f});
  CHECK(tracker.last_was_cut());
  CHECK(a == std::array<float, 3>{0.2f, 0.2f, 0.2f});
  // reset(): the next frame starts afresh.
  tracker.reset();
  CHECK_FALSE(tracker.has_value());
  a = tracker.update({0.5f, 0.5f, 0.55f});
  CHECK(a == std::array<float, 3>{0.5f, 0.5f, 0.55f});
}
