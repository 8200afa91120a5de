// The integer (and the few float) rules of SPEC 4 that every backend must apply bit for bit:
// the OpenCV equalizeHist LUT rule (256 and 4096 bins, from an integer or a temporally smoothed
// float histogram), the he_temporal recurrence, the CLAHE clip and redistribution rule, the AHE
// output rule, the limited-range mapping, reflect-101 indexing and OpenCV's integer RGB <-> grey /
// YCrCb formulas, and the histogram rectangle of an ROI. Header-only so the CUDA kernels can
// include it: under nvcc every function is __host__ __device__ (HAZEFREE_HD), histogram_rect
// (host side) aside.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/host_device.hpp"
#include "common/params.hpp"

namespace hazefree::equalize_rules {

constexpr int kBins = 256;        // 8-bit histogram
constexpr int kBitsBins = 4096;   // 12-bit BITS histogram (high nibbles of R, G, B)
constexpr int kMaxCode = 255;     // largest code of the 8-bit rule
constexpr int kBitsMaxCode = 4095;  // largest code of the BITS rule

// ---- global HE (cv::equalizeHist) ----------------------------------------------------------

// The rectangle the histogram is taken over (half-open).
struct HistogramRect {
  int x0, y0, x1, y1;
};

// The ROI clipped to the frame; the whole frame when the ROI is unset or lies outside it (a
// histogram of nothing has no equalization). Host side: both backends call it before launching.
inline HistogramRect histogram_rect(const Roi& roi, int width, int height) {
  if (roi.empty()) return {0, 0, width, height};
  const HistogramRect r{std::max(roi.x, 0), std::max(roi.y, 0), std::min(roi.x + roi.w, width),
                        std::min(roi.y + roi.h, height)};
  if (r.x0 >= r.x1 || r.y0 >= r.y1) return {0, 0, width, height};
  return r;
}

// saturate_cast<code>(x) for a float x: round half to even (cvRound is lrint in the default
// rounding mode), then clamp to [0, max_code].
HAZEFREE_HD inline int round_saturate(float x, int max_code) {
  const long r = ::lrintf(x);
  return r < 0 ? 0 : (r > max_code ? max_code : static_cast<int>(r));
}

// One LUT entry: `above_first` = sum of hist[u] for i0 < u <= v; `scale` from he_scale().
HAZEFREE_HD inline int he_code(std::uint32_t above_first, float scale, int max_code) {
  return round_saturate(static_cast<float>(above_first) * scale, max_code);
}
HAZEFREE_HD inline int he_code(float above_first, float scale, int max_code) {
  return round_saturate(above_first * scale, max_code);
}

// scale = max_code.f / (N - hist[i0]) in float, as OpenCV: the int count is converted to float
// first (rounded above 2^24 pixels, the same way OpenCV rounds it).
HAZEFREE_HD inline float he_scale(int max_code, std::uint32_t total, std::uint32_t first_count) {
  return static_cast<float>(max_code) / static_cast<float>(total - first_count);
}

// LUT of an integer histogram of `bins` bins (256 or 4096), codes 0..max_code (255 or 4095).
// First non-empty bin i0; if it holds every pixel (a constant image, or a single value inside the
// ROI) the LUT is the identity ("unchanged"); else lut[v] = 0 for v <= i0 and
// lut[v] = round_saturate(float(sum_{i0<u<=v} hist[u]) * scale) above. An all-zero histogram
// (nothing counted) also gives the identity. Entries below i0 only matter when the histogram
// came from a ROI; they are 0, where the cdf is.
template <typename Code>
HAZEFREE_HD inline void he_lut(const std::uint32_t* hist, int bins, int max_code, Code* lut) {
  std::uint32_t total = 0;
  for (int i = 0; i < bins; ++i) total += hist[i];
  int i0 = 0;
  while (i0 < bins && hist[i0] == 0) ++i0;
  if (i0 == bins || hist[i0] == total) {
    for (int i = 0; i < bins; ++i) lut[i] = static_cast<Code>(i);
    return;
  }
  const float scale = he_scale(max_code, total, hist[i0]);
  for (int i = 0; i <= i0; ++i) lut[i] = 0;
  std::uint32_t sum = 0;
  for (int i = i0 + 1; i < bins; ++i) {
    sum += hist[i];
    lut[i] = static_cast<Code>(he_code(sum, scale, max_code));
  }
}

// The same rule on a float histogram H (he_temporal): i0 = first bin with H > 0;
// rest = H[i0+1] + ... + H[bins-1] accumulated left to right in float (a sequential scan:
// a parallel float scan rounds differently, so a GPU builds this LUT in one thread);
// rest <= 0 -> identity; else scale = max_code.f / rest and
// lut[v] = round_saturate((H[i0+1] + ... + H[v]) * scale), accumulated the same way.
// On an integer-valued H below 2^24 this equals he_lut().
template <typename Code>
HAZEFREE_HD inline void he_lut_from_float(const float* hist, int bins, int max_code, Code* lut) {
  int i0 = 0;
  while (i0 < bins && !(hist[i0] > 0.f)) ++i0;
  float rest = 0.f;
  for (int i = i0 + 1; i < bins; ++i) rest += hist[i];
  if (i0 == bins || !(rest > 0.f)) {
    for (int i = 0; i < bins; ++i) lut[i] = static_cast<Code>(i);
    return;
  }
  const float scale = static_cast<float>(max_code) / rest;
  for (int i = 0; i <= i0; ++i) lut[i] = 0;
  float sum = 0.f;
  for (int i = i0 + 1; i < bins; ++i) {
    sum += hist[i];
    lut[i] = static_cast<Code>(he_code(sum, scale, max_code));
  }
}

// Named forms for the four cases.
HAZEFREE_HD inline void he_lut_256(const std::uint32_t* hist, std::uint8_t* lut) {
  he_lut(hist, kBins, kMaxCode, lut);
}
HAZEFREE_HD inline void he_lut_4096(const std::uint32_t* hist, std::uint16_t* lut) {
  he_lut(hist, kBitsBins, kBitsMaxCode, lut);
}
HAZEFREE_HD inline void he_lut_256_from_float(const float* hist, std::uint8_t* lut) {
  he_lut_from_float(hist, kBins, kMaxCode, lut);
}
HAZEFREE_HD inline void he_lut_4096_from_float(const float* hist, std::uint16_t* lut) {
  he_lut_from_float(hist, kBitsBins, kBitsMaxCode, lut);
}

// he_temporal: H_n = a h_n + (1 - a) H_{n-1}, evaluated as fma(a, float(h_n), (1-a) * H_{n-1})
// (one product rounded, then one fused multiply-add: the same bits on host and device whatever
// the compiler's contraction settings). The first frame after a reset starts with H_1 = h_1.
HAZEFREE_HD inline float he_temporal_update(float a, std::uint32_t h, float previous) {
  return ::fmaf(a, static_cast<float>(h), (1.f - a) * previous);
}
// One bin's step of the smoothed histogram: H_n from h_n and, when there is one, H_{n-1}. The
// one function every user of the state calls: both backends per frame and the jobs' scan of
// recorded histograms (SPEC 8).
HAZEFREE_HD inline float he_history_step(bool has_previous, float a, std::uint32_t h, float previous) {
  return has_previous ? he_temporal_update(a, h, previous) : static_cast<float>(h);
}

// ---- sliding-window AHE / CLAHE --------------------------------------------------------------

// Reflect-101 index (dcb|abcd|cba) for -n < i < 2n - 1; n == 1 maps everything to 0.
HAZEFREE_HD constexpr int reflect101(int i, int n) {
  if (n == 1) return 0;
  if (i < 0) return -i;
  if (i >= n) return 2 * n - 2 - i;
  return i;
}

// Window radius after the SPEC reduction: w/2, or min(width, height) - 1 when w/2 reaches it.
HAZEFREE_HD constexpr int ahe_radius(int window, int width, int height) {
  const int limit = (width < height ? width : height) - 1;
  const int r = window / 2;
  return r > limit ? limit : r;
}
// True when ahe_radius() reduced the radius (the caller warns once).
HAZEFREE_HD constexpr bool ahe_radius_reduced(int window, int width, int height) {
  return window / 2 >= (width < height ? width : height);
}

// CLAHE clip limit L = max(1, int(clip * n / 256)), computed in double as OpenCV does;
// 0 (no clipping) when clip <= 0.
HAZEFREE_HD inline int clahe_clip_limit(float clip, std::int64_t n) {
  if (!(clip > 0.f)) return 0;
  const int limit = static_cast<int>(static_cast<double>(clip) * static_cast<double>(n) / kBins);
  return limit < 1 ? 1 : limit;
}

// OpenCV's single-pass redistribution of `excess` clipped counts over 256 bins, in closed form:
// every bin gets excess / 256, and bins 0, s, 2s, ... get one more while the remainder
// r = excess % 256 lasts (s = max(256 / r, 1)). Returns how much bins 0..v gained in total.
HAZEFREE_HD constexpr std::uint32_t clahe_redistributed_below(std::uint32_t excess, int v) {
  const std::uint32_t batch = excess / kBins;
  const std::uint32_t residual = excess % kBins;
  std::uint32_t gained = batch * static_cast<std::uint32_t>(v + 1);
  if (residual != 0) {
    const std::uint32_t step = kBins / residual > 1 ? kBins / residual : 1;
    const std::uint32_t bumped = static_cast<std::uint32_t>(v) / step + 1;  // bins k*step <= v
    gained += bumped < residual ? bumped : residual;
  }
  return gained;
}

// CLAHE cdf at v from the window histogram, in the form a sliding implementation computes it:
// `clipped_below` = sum_{u<=v} min(h[u], L), `excess` = sum_u max(h[u] - L, 0).
HAZEFREE_HD constexpr std::uint32_t clahe_cdf(std::uint32_t clipped_below, std::uint32_t excess,
                                              int v) {
  return clipped_below + clahe_redistributed_below(excess, v);
}

// The clip and redistribution applied to a whole 256-bin histogram, literally (for checking a
// backend's closed form, and for backends that clip the histogram itself).
HAZEFREE_HD inline void clahe_clip_histogram(std::uint32_t* hist, int limit) {
  if (limit <= 0) return;
  std::uint32_t excess = 0;
  for (int i = 0; i < kBins; ++i) {
    if (hist[i] > static_cast<std::uint32_t>(limit)) {
      excess += hist[i] - static_cast<std::uint32_t>(limit);
      hist[i] = static_cast<std::uint32_t>(limit);
    }
  }
  const std::uint32_t batch = excess / kBins;
  std::uint32_t residual = excess % kBins;
  for (int i = 0; i < kBins; ++i) hist[i] += batch;
  if (residual != 0) {
    const int step = kBins / static_cast<int>(residual) > 1 ? kBins / static_cast<int>(residual) : 1;
    for (int i = 0; i < kBins && residual > 0; i += step, --residual) ++hist[i];
  }
}

// AHE output code: (255 * cdf + n/2) / n in integers (64-bit: n reaches 2^26 at w = 8191).
HAZEFREE_HD constexpr int ahe_code(std::int64_t cdf, std::int64_t n) {
  return static_cast<int>((kMaxCode * cdf + n / 2) / n);
}

// ---- output range and colour -----------------------------------------------------------------

// Limited-range video: equalized code e in [0,255] -> 16 + (219 e + 127) / 255 in [16,235].
HAZEFREE_HD constexpr int limited_range_code(int e) { return 16 + (219 * e + 127) / 255; }

HAZEFREE_HD constexpr int clamp_u8(int v) { return v < 0 ? 0 : (v > 255 ? 255 : v); }

// OpenCV's fixed point (14 fractional bits) colour formulas: CV_DESCALE(x, 14) = (x + 8192) >> 14
// (an arithmetic shift, so negative values round towards minus infinity as in OpenCV).
constexpr int kColorShift = 14;
constexpr int kColorHalf = 1 << (kColorShift - 1);
constexpr int kR2Y = 4899;    // 0.299
constexpr int kG2Y = 9617;    // 0.587
constexpr int kB2Y = 1868;    // 0.114
constexpr int kY2Cr = 11682;  // 0.713 (Cr = (R - Y) * 0.713 + 128)
constexpr int kY2Cb = 9241;   // 0.564 (Cb = (B - Y) * 0.564 + 128)
constexpr int kCr2R = 22987;  // 1.403
constexpr int kCr2G = -11698; // -0.714
constexpr int kCb2G = -5636;  // -0.344
constexpr int kCb2B = 29049;  // 1.773

HAZEFREE_HD constexpr int descale14(int x) { return (x + kColorHalf) >> kColorShift; }

// Grey: cv::COLOR_RGB2GRAY on 8 bits as OpenCV 4.x computes it, with 15-bit weights
// (R*9798 + G*19235 + B*3735 + 16384) >> 15. The 14-bit weights above (the Y of RGB2YCrCb) give a
// value one code away on 0.26% of colours, so grey mode does not use them.
constexpr int kGreyShift = 15;
constexpr int kR2Grey = 9798;   // 0.299 * 2^15
constexpr int kG2Grey = 19235;  // 0.587 * 2^15
constexpr int kB2Grey = 3735;   // 0.114 * 2^15
HAZEFREE_HD constexpr int rgb_to_grey(int r, int g, int b) {
  return (r * kR2Grey + g * kG2Grey + b * kB2Grey + (1 << (kGreyShift - 1))) >> kGreyShift;
}

// cv::COLOR_RGB2YCrCb on 8 bits (full-range BT.601).
struct YCrCb {
  int y, cr, cb;
};
HAZEFREE_HD constexpr YCrCb rgb_to_ycrcb(int r, int g, int b) {
  const int y = descale14(r * kR2Y + g * kG2Y + b * kB2Y);
  const int cr = descale14((r - y) * kY2Cr + (128 << kColorShift));
  const int cb = descale14((b - y) * kY2Cb + (128 << kColorShift));
  return {clamp_u8(y), clamp_u8(cr), clamp_u8(cb)};
}

// cv::COLOR_YCrCb2RGB on 8 bits.
struct Rgb {
  int r, g, b;
};
HAZEFREE_HD constexpr Rgb ycrcb_to_rgb(int y, int cr, int cb) {
  const int dcr = cr - 128;
  const int dcb = cb - 128;
  return {clamp_u8(y + descale14(dcr * kCr2R)), clamp_u8(y + descale14(dcb * kCb2G + dcr * kCr2G)),
          clamp_u8(y + descale14(dcb * kCb2B))};
}

// BITS: 12-bit index of the high nibbles (R << 8 | G << 4 | B), and the pixel rebuilt from a new
// index: its nibbles replace the high nibbles, the low nibbles are kept.
HAZEFREE_HD constexpr int bits_index(int r, int g, int b) {
  return ((r >> 4) << 8) | ((g >> 4) << 4) | (b >> 4);
}
HAZEFREE_HD constexpr Rgb bits_apply(int new_index, int r, int g, int b) {
  return {((new_index >> 8) & 15) << 4 | (r & 15), ((new_index >> 4) & 15) << 4 | (g & 15),
          (new_index & 15) << 4 | (b & 15)};
}

// ---- high bit depth (SPEC 7) -------------------------------------------------------------
// Frames of d = 9..16 bits: HE over 2^d bins with M = 2^d - 1 for 255 (he_lut() above takes the
// bin count and M); AHE/CLAHE over B = 2^min(d, 12) bins, a sample v falling in bin
// v >> (d - min(d, 12)). The forms below take the bin count or the depth; at 256 bins / 8 bits
// they are the rules above.

constexpr int kMaxAheBinsLog2 = 12;  // AHE/CLAHE histograms have at most 4096 bins

// Bins of the HE histogram at depth d.
HAZEFREE_HD constexpr int he_bins(int depth) { return 1 << depth; }
// The largest code at depth d, M = 2^d - 1.
HAZEFREE_HD constexpr int depth_max_code(int depth) { return (1 << depth) - 1; }
// AHE/CLAHE: the right shift from a sample to its bin, and the number of bins B.
HAZEFREE_HD constexpr int ahe_bin_shift(int depth) {
  return depth > kMaxAheBinsLog2 ? depth - kMaxAheBinsLog2 : 0;
}
HAZEFREE_HD constexpr int ahe_bins(int depth) { return 1 << (depth - ahe_bin_shift(depth)); }

// CLAHE clip limit over `bins` bins: L = max(1, int(clip * n / bins)) in double; 0 when clip <= 0.
HAZEFREE_HD inline int clahe_clip_limit(float clip, std::int64_t n, int bins) {
  if (!(clip > 0.f)) return 0;
  const int limit = static_cast<int>(static_cast<double>(clip) * static_cast<double>(n) / bins);
  return limit < 1 ? 1 : limit;
}

// The single-pass redistribution over `bins` bins in closed form: each bin gets excess / bins,
// and bins 0, s, 2s, ... one more while the remainder r = excess % bins lasts
// (s = max(bins / r, 1)). Returns what bins 0..v gained in total.
HAZEFREE_HD constexpr std::uint32_t clahe_redistributed_below(std::uint32_t excess, int v,
                                                              int bins) {
  const std::uint32_t n_bins = static_cast<std::uint32_t>(bins);
  const std::uint32_t batch = excess / n_bins;
  const std::uint32_t residual = excess % n_bins;
  std::uint32_t gained = batch * static_cast<std::uint32_t>(v + 1);
  if (residual != 0) {
    const std::uint32_t step = n_bins / residual > 1 ? n_bins / residual : 1;
    const std::uint32_t bumped = static_cast<std::uint32_t>(v) / step + 1;
    gained += bumped < residual ? bumped : residual;
  }
  return gained;
}
HAZEFREE_HD constexpr std::uint32_t clahe_cdf(std::uint32_t clipped_below, std::uint32_t excess,
                                              int v, int bins) {
  return clipped_below + clahe_redistributed_below(excess, v, bins);
}

// AHE output code at depth d: (M * cdf + n/2) / n in 64-bit integers.
HAZEFREE_HD constexpr int ahe_code(std::int64_t cdf, std::int64_t n, int max_code) {
  return static_cast<int>((static_cast<std::int64_t>(max_code) * cdf + n / 2) / n);
}

// Limited-range video at depth d (s = d - 8): e in [0, M] -> (16 << s) + ((219 << s) e + M/2) / M,
// in 64-bit integers ((219 << 8) * 65535 passes 2^31).
HAZEFREE_HD constexpr int limited_range_code(int e, int depth) {
  const int s = depth - 8;
  const std::int64_t m = (std::int64_t{1} << depth) - 1;
  return (16 << s) + static_cast<int>((static_cast<std::int64_t>(219 << s) * e + m / 2) / m);
}

HAZEFREE_HD constexpr int clamp_code(int v, int max_code) {
  return v < 0 ? 0 : (v > max_code ? max_code : v);
}

// OpenCV's grey and YCrCb formulas on samples of depth d (OpenCV's 16-bit forms: the same
// weights, chroma centred on 2^(d-1)). Every intermediate stays below 2^31 at 16 bits; the grey
// sum is taken in 64 bits all the same, as it comes within 2^15 of the limit.
HAZEFREE_HD constexpr int rgb_to_grey_depth(int r, int g, int b) {
  return static_cast<int>((static_cast<std::int64_t>(r) * kR2Grey +
                           static_cast<std::int64_t>(g) * kG2Grey +
                           static_cast<std::int64_t>(b) * kB2Grey + (1 << (kGreyShift - 1))) >>
                          kGreyShift);
}
HAZEFREE_HD constexpr YCrCb rgb_to_ycrcb_depth(int r, int g, int b, int depth) {
  const int max_code = (1 << depth) - 1;
  const int delta = 1 << (depth - 1);
  const int y = descale14(r * kR2Y + g * kG2Y + b * kB2Y);
  const int cr = descale14((r - y) * kY2Cr + (delta << kColorShift));
  const int cb = descale14((b - y) * kY2Cb + (delta << kColorShift));
  return {clamp_code(y, max_code), clamp_code(cr, max_code), clamp_code(cb, max_code)};
}
HAZEFREE_HD constexpr Rgb ycrcb_to_rgb_depth(int y, int cr, int cb, int depth) {
  const int max_code = (1 << depth) - 1;
  const int delta = 1 << (depth - 1);
  const int dcr = cr - delta;
  const int dcb = cb - delta;
  return {clamp_code(y + descale14(dcr * kCr2R), max_code),
          clamp_code(y + descale14(dcb * kCb2G + dcr * kCr2G), max_code),
          clamp_code(y + descale14(dcb * kCb2B), max_code)};
}

}  // namespace hazefree::equalize_rules
