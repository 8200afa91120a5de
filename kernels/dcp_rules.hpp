// The per-pixel and per-frame rules of the dark channel prior chain (SPEC 3) that every backend
// evaluates with the same expressions, in the same float order. Included by the CPU operators
// and by the CUDA kernels.
#pragma once

#include <cmath>
#include <stdexcept>

#include "kernels/host_device.hpp"

namespace hazefree::dcp {

inline constexpr int kAtmosphereBlock = 32;             // side of the blocks of step 3
inline constexpr float kMinAtmosphere = 1.0f / 255.0f;  // lower bound of each A_c
inline constexpr float kToleranceFloor = 1e-6f;         // max(d, 1e-6) of step 7

// Step 1: grey guide, float, this order.
HAZEFREE_HD inline float grey(float r, float g, float b) {
  return 0.299f * r + 0.587f * g + 0.114f * b;
}

HAZEFREE_HD inline float min3(float a, float b, float c) {
  const float m = a < b ? a : b;
  return m < c ? m : c;
}

// Step 3: how many ranked blocks are averaged: max(1, ceil(fraction * blocks)), the product in
// float (so that e.g. 0.07 * 100 gives 7, not 8 from the double value of 0.07f).
inline int atmosphere_top_count(int blocks, float fraction) {
  const int n = static_cast<int>(std::ceil(fraction * static_cast<float>(blocks)));
  return n < 1 ? 1 : (n > blocks ? blocks : n);
}

// Step 4, the one step that carries state from frame to frame: A_n from A_{n-1} (when
// `has_previous`) and the estimate A^_n, in place in `value`. A cut (mean_c |A^_n - A_{n-1}| >
// scene_cut, the sum in channel order) or the first frame takes A^_n as it is; otherwise each
// channel moves by smoothing * (A^_n - A_{n-1}) clamped to +-max_step. Float, this order. Every
// user of the state calls this one function: the CPU tracker, the CUDA update kernel and the
// jobs' scan of recorded estimates (SPEC 8), so they cannot drift apart. Returns true at a cut.
HAZEFREE_HD inline bool next_atmospheric_light(bool has_previous, float value[3], const float estimate[3],
                                               float smoothing, float max_step, float scene_cut) {
  bool cut = !has_previous;
  if (!cut) {
    const float d = (fabsf(estimate[0] - value[0]) + fabsf(estimate[1] - value[1]) +
                     fabsf(estimate[2] - value[2])) / 3.0f;
    cut = d > scene_cut;
  }
  for (int c = 0; c < 3; ++c) {
    if (cut) {
      value[c] = estimate[c];
    } else {
      float step = smoothing * (estimate[c] - value[c]);
      step = step < -max_step ? -max_step : (step > max_step ? max_step : step);
      value[c] = value[c] + step;
    }
  }
  return cut;
}

// ---- haze index and auto strength (SPEC 13) --------------------------------------------------
// The haze index of a frame is the veil that lifts even its darkest parts: the 5th percentile
// of the dark channel D (step 2) plus a tenth of its 25th percentile, over the mean of the
// frame's estimate A^ (step 3), clamped to [0, 1]. Under Koschmieder's model D >= A (1 - t), so
// the darkest twentieth of a clear scene (its shadows, dark objects) gives about 0 and a hazy one
// the airlight in front of its nearest objects; the 25th percentile adds the veil over the bulk
// of the scene, for fog whose foreground is clear (docs/ALGORITHMS.md). The percentiles come
// from an integer histogram of D with
// kHazeBins bins of width 1 / kHazeScale (the last one holds every D >= (kHazeBins - 1) /
// kHazeScale), which both backends count exactly, so the index is the same on both.
inline constexpr int kHazeScale = 256;
inline constexpr int kHazeBins = 257;       // [0, 1) in steps of 1/256, then D >= 1
inline constexpr int kHazePercentileLow = 5;    // percent of the pixels at or below the veil
inline constexpr int kHazePercentileBulk = 25;  // and of the bulk of the scene
inline constexpr float kHazeBulkWeight = 0.1f;
// The response of the auto strength s(h): 0 up to kHazeClear (clear scenes), 1 from kHazeDense
// on, smoothstep between; omega and the brightness boost are scaled by s.
inline constexpr float kHazeClear = 0.03f;
inline constexpr float kHazeDense = 0.07f;

// The histogram bin of a dark-channel value (values below 0 or NaN count as 0).
HAZEFREE_HD inline int haze_bin(float dark) {
  if (!(dark > 0.0f)) return 0;
  const float scaled = dark * static_cast<float>(kHazeScale);
  return scaled >= static_cast<float>(kHazeBins - 1) ? kHazeBins - 1 : static_cast<int>(scaled);
}

// The raw index h^ of a frame from its dark-channel histogram (`pixels` counted in all) and its
// estimate A^: the lower edges of the bins that hold the 5th and the 25th percentile (b5, b25),
// (b5 + 0.1 b25) / 256 over mean_c A^_c. A percentile is the first bin whose cumulative count
// reaches haze_wanted_count(pixels, percent).
HAZEFREE_HD inline long long haze_wanted_count(long long pixels, int percent) {
  const long long wanted = (pixels * percent + 99) / 100;
  return wanted < 1 ? 1 : wanted;
}

HAZEFREE_HD inline float haze_from_bins(int low, int bulk, const float estimate[3]) {
  const float veil = (static_cast<float>(low) + kHazeBulkWeight * static_cast<float>(bulk)) /
                     static_cast<float>(kHazeScale);
  const float light = (estimate[0] + estimate[1] + estimate[2]) / 3.0f;
  const float h = veil / light;
  return h < 0.0f ? 0.0f : (h > 1.0f ? 1.0f : h);
}

HAZEFREE_HD inline int haze_percentile_bin(const unsigned* histogram, long long pixels, int percent) {
  const long long wanted = haze_wanted_count(pixels, percent);
  long long seen = 0;
  for (int b = 0; b < kHazeBins; ++b) {
    seen += histogram[b];
    if (seen >= wanted) return b;
  }
  return kHazeBins - 1;
}

HAZEFREE_HD inline float haze_estimate(const unsigned* histogram, long long pixels, const float estimate[3]) {
  return haze_from_bins(haze_percentile_bin(histogram, pixels, kHazePercentileLow),
                        haze_percentile_bin(histogram, pixels, kHazePercentileBulk), estimate);
}

// The index h_n from h_{n-1} and h^_n with the rule of the atmospheric light (step 4): the first
// frame and a cut (as step 4 found it for A) take h^_n; otherwise h moves a tenth of the way to
// h^_n (kHazeSmoothing), and inside the response's band [kHazeClear, kHazeDense], where the
// strength changes with it, by at most kHazeMaxStep a frame: the strength crosses from none to
// all in 16 frames at the fastest and does not flicker with the percentiles' frame-to-frame
// noise. Outside the band the strength is constant whatever h does, so h is not held there: a
// frame that clears from dense haze (h^ 0.5) reaches the band in about 0.8 s at 25 fps, not in
// 7 s (docs/ALGORITHMS.md).
inline constexpr float kHazeSmoothing = 0.1f;
inline constexpr float kHazeMaxStep = 0.0025f;
HAZEFREE_HD inline float next_haze_index(bool restart, float previous, float estimate) {
  if (restart) return estimate;
  const float step = kHazeSmoothing * (estimate - previous);
  const float moved = previous + step;
  if (step < 0.0f) {  // falling: from the band's top (or below it) at most kHazeMaxStep
    if (!(previous > kHazeClear)) return moved;
    const float lowest = (previous < kHazeDense ? previous : kHazeDense) - kHazeMaxStep;
    return moved > lowest ? moved : lowest;
  }
  if (!(previous < kHazeDense)) return moved;  // rising above the band
  const float highest = (previous > kHazeClear ? previous : kHazeClear) + kHazeMaxStep;
  return moved < highest ? moved : highest;
}

// The strength s(h) in [0, 1] that scales omega and the brightness boost with auto strength
// (1 without: the configured values exactly).
HAZEFREE_HD inline float auto_strength(bool enabled, float h) {
  if (!enabled) return 1.0f;
  float x = (h - kHazeClear) / (kHazeDense - kHazeClear);
  x = x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x);
  return x * x * (3.0f - 2.0f * x);
}

// Step 5: raw transmission from the filtered min_c(I_c / A_c) (IEEE division, not a reciprocal).
HAZEFREE_HD inline float raw_transmission(float filtered, float omega) {
  return 1.0f - omega * filtered;
}

// Step 7: bright-region tolerance. `mean_a` = (A_0 + A_1 + A_2) / 3, k <= 0 disables it.
HAZEFREE_HD inline float tolerate(float t, float r, float g, float b, float mean_a, float k) {
  if (!(k > 0.0f)) return t;
  const float d = std::fabs((r + g + b) / 3.0f - mean_a);
  if (d > k) return t;
  const float scaled = t * k / (d > kToleranceFloor ? d : kToleranceFloor);
  return scaled < 1.0f ? scaled : 1.0f;
}

// Steps 8 and 9 for one channel: recovery with max(t, t0), clamp to [0,1], brightness.
HAZEFREE_HD inline float recover(float i, float a, float t, float t0, float brightness) {
  const float tt = t > t0 ? t : t0;
  float j = (i - a) / tt + a;
  j = j < 0.0f ? 0.0f : (j > 1.0f ? 1.0f : j);
  return j + (1.0f - j) * j * brightness;
}

// ---- fast guided filter geometry (gf_subsample = s > 1) -----------------------------------
// The subsampled image has ceil(W / s) x ceil(H / s) samples; sample (i, j) is the mean of the
// guide (and of t~) over the s x s block of full-resolution pixels [j s, j s + s) x [i s, i s + s)
// clipped to the image (partial blocks average what exists; the sum is taken in double, in
// raster order, then divided and rounded to float). The box radius there is
// max(1, round(r / s)) = max(1, (r + s / 2) / s) in integers.
// Upsampling of mean(a), mean(b) is bilinear with the samples at the block centres of a uniform
// grid: full-resolution x maps to u = (2 x + 1 - s) / (2 s); j0 = floor(u), fx = u - j0 as the
// exact fraction (2x + 1 - s - 2 s j0) / (2 s); u < 0 gives j0 = 0, fx = 0; j0 >= n - 1 gives
// j0 = n - 1, fx = 0. v = top + fy (bottom - top), top = m00 + fx (m01 - m00), likewise bottom.
inline int subsampled_size(int full, int s) { return (full + s - 1) / s; }

// Step 6's arguments, as both backends check them: guide, input and output of one size (w x h,
// not empty), radius >= 1, eps > 0, subsampling >= 1. Host side.
inline void check_guided_filter_args(int w, int h, int input_w, int input_h, int output_w,
                                     int output_h, int radius, float eps, int subsample) {
  if (w <= 0 || h <= 0 || input_w != w || input_h != h || output_w != w || output_h != h)
    throw std::invalid_argument("guided filter: planes of different sizes");
  if (radius < 1 || !(eps > 0.f) || subsample < 1)
    throw std::invalid_argument("guided filter: invalid radius, eps or subsampling");
}
inline int subsampled_radius(int radius, int s) {
  const int r = (radius + s / 2) / s;
  return r < 1 ? 1 : r;
}

struct BilinearTap {
  int i0, i1;  // sample indices, i1 = min(i0 + 1, n - 1)
  float f;     // weight of i1
};

HAZEFREE_HD inline BilinearTap bilinear_tap(int x, int s, int n) {
  const int num = 2 * x + 1 - s, den = 2 * s;
  if (num < 0) return {0, n > 1 ? 1 : 0, 0.0f};
  const int i0 = num / den;
  if (i0 >= n - 1) return {n - 1, n - 1, 0.0f};
  return {i0, i0 + 1, static_cast<float>(num - i0 * den) / static_cast<float>(den)};
}

// The bilinear sample at column tap tx between row r0 and the row below it, r1, at weight fy of
// r1: the guided filter's coefficients brought back to full resolution (CPU and CUDA).
HAZEFREE_HD inline float bilinear(const float* r0, const float* r1, const BilinearTap& tx, float fy) {
  const float top = r0[tx.i0] + tx.f * (r0[tx.i1] - r0[tx.i0]);
  const float bottom = r1[tx.i0] + tx.f * (r1[tx.i1] - r1[tx.i0]);
  return top + fy * (bottom - top);
}

}  // namespace hazefree::dcp
