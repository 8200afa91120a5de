// Guided filter against the double-precision oracle (direct box sums), exact and fast variants.
// Tolerance: the product rounds each horizontal window sum and each box mean to float once
// (relative 6e-8); var and cov subtract means of size ~0.25, so their absolute error is ~1e-7,
// which a = cov / (var + eps) divides by eps. The bound |q - q_ref| <= 20 * 1e-7 / eps (2e-6 at
// the default eps 1e-3) leaves room for that (measured: below 0.03 * 1e-7 / eps).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "kernels/dehaze_ops.hpp"
#include "oracles/dehaze_oracle.hpp"
#include "support/dcp_test_support.hpp"

using namespace hazefree;

namespace {

oracle::Grid<double> to_double(const oracle::Grid<float>& g) {
  oracle::Grid<double> d(g.w, g.h);
  for (std::size_t i = 0; i < g.v.size(); ++i) d.v[i] = g.v[i];
  return d;
}

// A guide with edges and flat areas, and a transmission-like input correlated with it.
void make_pair(int w, int h, unsigned seed, oracle::Grid<float>& guide, oracle::Grid<float>& input) {
  const oracle::Grid<float> noise = test::random_grid(w, h, seed);
  guide = oracle::Grid<float>(w, h);
  input = oracle::Grid<float>(w, h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const float base = ((x / 7 + y / 5) % 3) * 0.3f + 0.05f;
      guide.at(x, y) = std::min(1.f, base + 0.05f * noise.at(x, y));
      input.at(x, y) = 1.f - 0.6f * base + 0.1f * noise.at(w - 1 - x, y);
    }
}

double max_error(int w, int h, int r, float eps, int s, int threads, unsigned seed) {
  oracle::Grid<float> g, p;
  make_pair(w, h, seed, g, p);
  test::OwnedPlane gp = test::to_plane(g), pp = test::to_plane(p), out(w, h, 2);
  cpu::GuidedFilter gf;
  gf.apply(gp.plane, pp.plane, out.plane, r, eps, s, threads);
  const oracle::Grid<double> ref = s > 1 ? oracle::fast_guided_filter(to_double(g), to_double(p), r, eps, s)
                                         : oracle::guided_filter(to_double(g), to_double(p), r, eps);
  const oracle::Grid<float> got = test::to_grid(out.plane);
  double worst = 0.0;
  for (std::size_t i = 0; i < got.v.size(); ++i) worst = std::max(worst, std::fabs(got.v[i] - ref.v[i]));
  return worst;
}

}  // namespace

TEST_CASE("guided filter matches the double oracle on a table of sizes and radii") {
  const int sizes[][2] = {{1, 1}, {2, 2}, {3, 2}, {17, 9}, {33, 31}, {97, 61}, {250, 40}};
  double worst = 0.0;
  for (const auto& sz : sizes)
    for (int r : {1, 2, 5, 16, 32, 300})
      for (float eps : {1e-3f, 1e-2f}) {
        const double e = max_error(sz[0], sz[1], r, eps, 1, 2, sz[0] + r);
        INFO(sz[0] << "x" << sz[1] << " r=" << r << " eps=" << eps << " error=" << e);
        CHECK(e <= 20 * 1e-7 / eps);
        worst = std::max(worst, e / (1e-7 / eps));
      }
  MESSAGE("guided filter: worst error = " << worst << " x 1e-7/eps");
}

TEST_CASE("guided filter on a 640x360 frame with the default radius") {
  const double e = max_error(640, 360, 32, 1e-3f, 1, 0, 3);
  MESSAGE("guided filter 640x360 r=32: max |q - q_ref| = " << e);
  CHECK(e <= 2e-6);
}

TEST_CASE("fast guided filter matches the oracle of the documented geometry") {
  const int sizes[][2] = {{1, 1}, {3, 2}, {17, 9}, {64, 48}, {101, 77}};
  for (const auto& sz : sizes)
    for (int s : {2, 3, 4, 8})
      for (int r : {1, 8, 32}) {
        const double e = max_error(sz[0], sz[1], r, 1e-3f, s, 2, sz[0] + s);
        INFO(sz[0] << "x" << sz[1] << " s=" << s << " r=" << r << " error=" << e);
        CHECK(e <= 2e-6);
      }
}

TEST_CASE("guided filter is identical for any thread count and keeps a constant input") {
  oracle::Grid<float> g, p;
  make_pair(211, 97, 8, g, p);
  test::OwnedPlane gp = test::to_plane(g), pp = test::to_plane(p);
  for (int s : {1, 4}) {
    test::OwnedPlane a(211, 97), b(211, 97), c(211, 97);
    cpu::GuidedFilter gf;
    gf.apply(gp.plane, pp.plane, a.plane, 16, 1e-3f, s, 1);
    gf.apply(gp.plane, pp.plane, b.plane, 16, 1e-3f, s, 2);
    gf.apply(gp.plane, pp.plane, c.plane, 16, 1e-3f, s, 0);
    CHECK(test::to_grid(a.plane).v == test::to_grid(b.plane).v);
    CHECK(test::to_grid(a.plane).v == test::to_grid(c.plane).v);
  }
  const oracle::Grid<float> flat(40, 30, 0.7f);
  test::OwnedPlane f = test::to_plane(flat), o(40, 30);
  cpu::GuidedFilter gf;
  gf.apply(f.plane, f.plane, o.plane, 8, 1e-3f, 1, 2);
  for (float v : test::to_grid(o.plane).v) CHECK(v == doctest::Approx(0.7f).epsilon(1e-6));
}
