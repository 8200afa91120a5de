// The running-minimum filter against the direct (2r+1)^2 scan: exact, on a table of sizes and
// radii including r = 0 and windows larger than the image.
#include <doctest/doctest.h>

#include "kernels/dehaze_ops.hpp"
#include "oracles/dehaze_oracle.hpp"
#include "support/dcp_test_support.hpp"

using namespace hazefree;

namespace {

void check_min_filter(int w, int h, int r, unsigned seed, int levels, int threads) {
  const oracle::Grid<float> src = test::random_grid(w, h, seed, levels);
  const oracle::Grid<float> expected = oracle::patch_min(src, r);
  test::OwnedPlane in = test::to_plane(src);
  test::OwnedPlane out(w, h, 5);
  cpu::MinFilter filter;
  filter.apply(in.plane, out.plane, r, threads);
  const oracle::Grid<float> got = test::to_grid(out.plane);
  int mismatches = 0;
  for (std::size_t i = 0; i < got.v.size(); ++i) mismatches += got.v[i] != expected.v[i];
  INFO(w << "x" << h << " r=" << r << " threads=" << threads);
  CHECK(mismatches == 0);
}

}  // namespace

TEST_CASE("min filter equals the direct patch minimum on odd sizes and radii") {
  const int sizes[][2] = {{1, 1}, {2, 2}, {3, 2}, {2, 3}, {17, 9}, {9, 17}, {33, 31}, {70, 45}, {1, 40}, {40, 1}};
  for (const auto& s : sizes)
    for (int r : {0, 1, 2, 3, 7, 15, 40, 1000})
      check_min_filter(s[0], s[1], r, static_cast<unsigned>(s[0] * 131 + s[1] * 7 + r), 0, 2);
}

TEST_CASE("min filter is exact with many ties and with any thread count") {
  for (int threads : {1, 2, 0}) {
    check_min_filter(67, 41, 7, 11, 4, threads);
    check_min_filter(130, 20, 5, 12, 2, threads);
  }
}

TEST_CASE("min filter on 1920x1080 crops and the full frame") {
  check_min_filter(1920, 1080, 7, 5, 0, 0);
  // A crop at an odd offset, read through the full frame's stride.
  const oracle::Grid<float> frame = test::random_grid(1920, 1080, 6);
  test::OwnedPlane full = test::to_plane(frame);
  const int x0 = 301, y0 = 77, w = 243, h = 137;
  PlaneF crop{full.plane.row(y0) + x0, w, h, full.plane.stride};
  oracle::Grid<float> sub(w, h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) sub.at(x, y) = frame.at(x0 + x, y0 + y);
  test::OwnedPlane out(w, h);
  cpu::MinFilter filter;
  filter.apply(crop, out.plane, 7, 2);
  CHECK(test::to_grid(out.plane).v == oracle::patch_min(sub, 7).v);
}

TEST_CASE("min filter in place and on a constant image") {
  oracle::Grid<float> src(29, 13, 0.25f);
  test::OwnedPlane p = test::to_plane(src);
  cpu::MinFilter filter;
  filter.apply(p.plane, p.plane, 7, 2);
  for (float v : test::to_grid(p.plane).v) CHECK(v == 0.25f);

  const oracle::Grid<float> rnd = test::random_grid(50, 37, 9);
  test::OwnedPlane q = test::to_plane(rnd);
  filter.apply(q.plane, q.plane, 3, 2);  // reuses the scratch of another size
  CHECK(test::to_grid(q.plane).v == oracle::patch_min(rnd, 3).v);
}
