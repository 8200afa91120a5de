// The operators of the dark channel prior chain on the CPU (SPEC 3), exposed one by one so that
// the tests can check each against a naive oracle and the CUDA port can mirror them. Each class
// owns its scratch, grown on the first call for a size and reused afterwards (no allocation per
// frame). `threads`: OpenMP threads, 0 = all cores, 1 = sequential; results do not depend on it.
#pragma once

#include <array>
#include <cstddef>
#include <vector>

#include "kernels/color_convert.hpp"
#include "common/params.hpp"

namespace hazefree {

// A float plane, `stride` floats between rows.
struct PlaneF {
  float* data = nullptr;
  int width = 0;
  int height = 0;
  int stride = 0;
  float* row(int y) const { return data + static_cast<std::ptrdiff_t>(y) * stride; }
};

}  // namespace hazefree

namespace hazefree::cpu {

// Step 1 and the input of step 2: grey = 0.299 R + 0.587 G + 0.114 B, channel_min = min_c I_c.
void grey_and_channel_min(RgbPlanesF rgb, const PlaneF& grey, const PlaneF& channel_min,
                          int threads);

// Input of step 5: out = min_c (I_c / A_c), IEEE division.
void normalised_channel_min(RgbPlanesF rgb, std::array<float, 3> a, const PlaneF& out,
                            int threads);

// Step 5 after the min filter: t~ = 1 - omega * filtered, in place.
void raw_transmission(const PlaneF& filtered, float omega, int threads);

// Step 2: dst = min over the (2r+1)^2 window clipped at the borders, exact. Separable van Herk /
// Gil-Werman running minimum, about 3 comparisons per pixel whatever r; a radius at least the
// image size behaves as the whole image. `src` and `dst` have the same size and may alias.
class MinFilter {
 public:
  void apply(const PlaneF& src, const PlaneF& dst, int radius, int threads);

 private:
  std::vector<float> rows_;     // after the horizontal pass
  std::vector<float> scratch_;  // per-thread suffix-min buffers
};

// Step 3. One 32x32 block's maximum of the dark channel and where it is.
struct BlockMax {
  float dark = 0.f;  // maximum of D in the block
  float grey = 0.f;  // grey guide at that pixel (first tie-break)
  int x = 0, y = 0;  // position (first in raster order among full ties)
  int index = 0;     // block index, raster order over the block grid
};

class AtmosphereEstimator {
 public:
  // A^ from the dark channel, the grey guide and the RGB planes (all the same size): the mean of
  // I_c, in double over the ranked positions, rounded to float and clamped to >= 1/255.
  std::array<float, 3> estimate(const PlaneF& dark, const PlaneF& grey, RgbPlanesF rgb,
                                float top_fraction, int threads);
  // The blocks of the last estimate, best first (ranked by dark, then grey, then index).
  const std::vector<BlockMax>& ranked_blocks() const { return blocks_; }
  int used_blocks() const { return used_; }

 private:
  std::vector<BlockMax> blocks_;
  int used_ = 0;
};

// SPEC 13: the raw haze index h^ of a frame from its dark channel and its estimate A^
// (kernels/dcp_rules.hpp: the 5th percentile of D by an exact integer histogram, over mean A^).
float haze_estimate(const PlaneF& dark, const std::array<float, 3>& estimate, int threads);

// Step 4: the inter-frame constraint, state carried from frame to frame.
class AtmosphereTracker {
 public:
  explicit AtmosphereTracker(const DcpParams& params);
  // A_n from A^_n (the first frame after construction or reset takes A^ as it is), and the haze
  // index h_n from h^_n by the same rule (SPEC 13), restarting where A does.
  std::array<float, 3> update(const std::array<float, 3>& estimate, float haze_estimate = 0.f);
  void reset() { has_value_ = false; }
  bool has_value() const { return has_value_; }
  bool last_was_cut() const { return last_cut_; }  // true also for the first frame
  std::array<float, 3> value() const { return value_; }
  float haze_index() const { return haze_; }
  // Starts the next frame from A = `value` and h = `haze` (has_value: as if frames came before),
  // for jobs.
  void set(bool has_value, const std::array<float, 3>& value, float haze = 0.f) {
    has_value_ = has_value;
    value_ = value;
    haze_ = haze;
  }

 private:
  float smoothing_, max_step_, scene_cut_;
  std::array<float, 3> value_{0.f, 0.f, 0.f};
  float haze_ = 0.f;
  bool has_value_ = false;
  bool last_cut_ = false;
};

// Step 6: guided filter q = mean(a) G + mean(b), a = cov(G,p) / (var(G) + eps) with var >= 0,
// b = mean(p) - a mean(G). Box means: horizontal window sums from double prefix sums, rounded to
// float once, then vertical running sums in double (start at row 0's window, add the row entering,
// subtract the row leaving); each multiplied by the double reciprocal 1 / (count_y * count_x) of
// the true window count (clipped at the borders) and rounded to float. a and b are computed in double from those
// float means, stored as float. The cost does not depend on the radius. `subsample` > 1 is the
// fast guided filter with the geometry of kernels/dcp_rules.hpp. `output` may alias `input`.
class GuidedFilter {
 public:
  void apply(const PlaneF& guide, const PlaneF& input, const PlaneF& output, int radius,
             float eps, int subsample, int threads);

 private:
  void ensure(int width, int height, int threads);
  void coefficients(const PlaneF& guide, const PlaneF& input, int radius, float eps, int threads);

  int width_ = 0, height_ = 0;
  std::vector<float> guide_s_, input_s_;  // subsampled inputs (fast variant)
  std::vector<float> horizontal_;         // horizontal window sums, up to 4 planes
  // Products G*G and G*p enter the box sums in double, never as float planes.
  std::vector<float> mean_[4];            // box means / coefficient planes
  std::vector<double> scratch_;           // per-thread prefix sums and column accumulators
};

// Steps 7 to 9 in place: tolerance K, recovery with max(t, t0) clamped to [0,1], brightness.
void recover(RgbPlanesF rgb, const PlaneF& transmission, std::array<float, 3> a,
             const DcpParams& params, int threads);

}  // namespace hazefree::cpu
