// Naive references for the dark channel prior chain (SPEC 3), written straight from the
// definitions: direct window scans, sorting, double arithmetic. Slow on purpose; shares no code
// with the product.
#pragma once

#include <array>
#include <vector>

namespace hazefree::oracle {

// Row-major w x h image of doubles or floats.
template <typename T>
struct Grid {
  int w = 0, h = 0;
  std::vector<T> v;
  Grid() = default;
  Grid(int w_, int h_, T fill = T{}) : w(w_), h(h_), v(static_cast<std::size_t>(w_) * h_, fill) {}
  T& at(int x, int y) { return v[static_cast<std::size_t>(y) * w + x]; }
  const T& at(int x, int y) const { return v[static_cast<std::size_t>(y) * w + x]; }
};

// Minimum over the (2r+1)^2 window clipped to the image, by direct scan.
Grid<float> patch_min(const Grid<float>& src, int r);

// Mean over the (2r+1)^2 window clipped to the image (true count), direct sums in double.
Grid<double> box_mean(const Grid<double>& src, int r);

// Guided filter straight from He et al., all in double.
Grid<double> guided_filter(const Grid<double>& guide, const Grid<double>& input, int r, double eps);

// The fast guided filter with the documented geometry: s x s block means, radius
// max(1, (r + s/2) / s), bilinear upsampling of mean(a), mean(b) at block centres.
Grid<double> fast_guided_filter(const Grid<double>& guide, const Grid<double>& input, int r,
                                double eps, int s);

struct AtmosphereResult {
  std::array<double, 3> a{};          // clamped to >= 1/255
  std::vector<std::array<int, 2>> positions;  // chosen pixel of each used block, best first
  std::vector<int> block_order;       // block indices, best first
};

// Step 3 by sorting: per block, all pixels sorted by (dark desc, grey desc, raster asc); then
// blocks sorted by (dark desc, grey desc, index asc); mean of the first max(1, ceil(f n)).
AtmosphereResult atmosphere(const Grid<float>& dark, const Grid<float>& grey,
                            const std::array<Grid<float>, 3>& rgb, float fraction);

struct Params {
  int patch_radius = 7;
  double omega = 0.95;
  int gf_radius = 32;
  double gf_eps = 1e-3;
  int gf_subsample = 1;
  double k_tolerance = 80.0 / 255.0;
  double t0 = 0.1;
  double brightness = 0.2;
};

// Steps 5 to 9 with a given A, in double; returns J' per channel (before quantisation).
std::array<Grid<double>, 3> recover_with(const std::array<Grid<float>, 3>& rgb,
                                         const std::array<double, 3>& a, const Params& p);

// ---- the whole chain in double, at any depth (SPEC 7) ----------------------------------------
// The input is RGB in [0,1] in double (for a picture of depth d: its codes / (2^d - 1), exact),
// so the reference does not depend on the product's float rounding anywhere: grey, dark channel,
// the atmospheric light (step 3 ranked by sorting, clamped to >= 1/255), the raw transmission,
// the guided filter, recovery and brightness, all in double. Steps 5 to 9 are recover_with's.
struct ChainResult {
  std::array<Grid<double>, 3> j;  // J' per channel in [0,1], before quantisation
  std::array<double, 3> a{};      // A^ of step 3 (the first frame's A)
};
ChainResult dehaze_double(const std::array<Grid<double>, 3>& rgb, const Params& p,
                          double top_fraction);
// Step 3 alone in double: A^ of `rgb` with dark channel radius `patch_radius`.
std::array<double, 3> atmosphere_double(const std::array<Grid<double>, 3>& rgb, int patch_radius,
                                        double top_fraction);

// Grey guide of step 1 as the spec writes it (float).
Grid<float> grey_of(const std::array<Grid<float>, 3>& rgb);
// min_c I_c.
Grid<float> channel_min(const std::array<Grid<float>, 3>& rgb);

}  // namespace hazefree::oracle
