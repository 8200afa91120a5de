// The fixed-point colour conversion (kernels/color_rules.hpp) at depth d = 9..16 (SPEC 7), for the
// equalization modes that go through RGB (rgb on YUV input). The same construction as at 8 bits
// with the code scales of depth d (s = d - 8, M = 2^d - 1):
//   limited range: Y = (16 << s) + (219 << s) Y', C = (128 << s) + (224 << s) C'
//   full range:    Y = M Y',                     C = (128 << s) + M C'
// and R, G, B in 0..M. Coefficients keep kFixedBits = 16 fractional bits; the sums are 64-bit
// (a 16-bit luma times the ~1.16 luma gain of limited range passes 2^31). Header-only and
// __host__ __device__ under nvcc so that both backends compute the same bits.
#pragma once

#include <cstdint>

#include "common/image.hpp"
#include "kernels/color_rules.hpp"
#include "kernels/host_device.hpp"

namespace hazefree::color {

// Integer code scales of depth d.
struct DepthScales {
  int y_offset, y_scale, c_zero, c_scale, max;
};

HAZEFREE_HD constexpr DepthScales depth_scales(ColorRange range, int depth) {
  const int s = depth - 8;
  const int max = (1 << depth) - 1;
  if (range == ColorRange::full) return {0, max, kChromaZero << s, max, max};
  return {16 << s, 219 << s, kChromaZero << s, 224 << s, max};
}

// YCbCr codes -> RGB codes at depth d:
//   R = clamp(((Y - y_offset) * y_mul + (V - c_zero) * r_cr + half) >> 16, 0, max), ...
struct YuvToRgbDepthI {
  int y_offset, c_zero, max;
  int y_mul, r_cr, g_cb, g_cr, b_cb;
};

HAZEFREE_HD constexpr YuvToRgbDepthI yuv_to_rgb_depth_i(ColorMatrix matrix, ColorRange range,
                                                        int depth) {
  const MatrixWeights w = matrix_weights(matrix);
  const DepthScales s = depth_scales(range, depth);
  const double kg = 1.0 - w.kr - w.kb;
  const double c = static_cast<double>(s.max) / s.c_scale * kFixedOne;
  return {s.y_offset,
          s.c_zero,
          s.max,
          round_to_int(static_cast<double>(s.max) / s.y_scale * kFixedOne),
          round_to_int(2.0 * (1.0 - w.kr) * c),
          round_to_int(-2.0 * w.kb * (1.0 - w.kb) / kg * c),
          round_to_int(-2.0 * w.kr * (1.0 - w.kr) / kg * c),
          round_to_int(2.0 * (1.0 - w.kb) * c)};
}

// RGB codes -> YCbCr codes at depth d, with the exact row sums of the 8-bit rule (y_g, cb_g and
// cr_g absorb the rounding: white maps to the top luma code, any grey to exactly c_zero).
struct RgbToYuvDepthI {
  int y_offset, c_zero, max;
  int y_r, y_g, y_b, cb_r, cb_g, cb_b, cr_r, cr_g, cr_b;
};

HAZEFREE_HD constexpr RgbToYuvDepthI rgb_to_yuv_depth_i(ColorMatrix matrix, ColorRange range,
                                                        int depth) {
  const MatrixWeights w = matrix_weights(matrix);
  const DepthScales s = depth_scales(range, depth);
  const double y = static_cast<double>(s.y_scale) / s.max * kFixedOne;
  const double cb = static_cast<double>(s.c_scale) / s.max / (2.0 * (1.0 - w.kb)) * kFixedOne;
  const double cr = static_cast<double>(s.c_scale) / s.max / (2.0 * (1.0 - w.kr)) * kFixedOne;
  const int y_r = round_to_int(w.kr * y), y_b = round_to_int(w.kb * y);
  const int y_sum = round_to_int(y);
  const int cb_r = round_to_int(-w.kr * cb), cb_b = round_to_int((1.0 - w.kb) * cb);
  const int cr_r = round_to_int((1.0 - w.kr) * cr), cr_b = round_to_int(-w.kb * cr);
  return {s.y_offset, s.c_zero, s.max, y_r, y_sum - y_r - y_b, y_b, cb_r, -cb_r - cb_b, cb_b,
          cr_r, -cr_r - cr_b, cr_b};
}

HAZEFREE_HD constexpr int clamp_depth(std::int64_t v, int max) {
  return static_cast<int>(v < 0 ? 0 : (v > max ? max : v));
}

// (acc + half) >> (16 + count_log2) in 64 bits: the rounded result of a sum over 1, 2 or 4
// pixels (a chroma block), floor semantics for the half as at 8 bits.
HAZEFREE_HD constexpr std::int64_t fixed_round_64(std::int64_t acc, int count_log2) {
  const int shift = kFixedBits + count_log2;
  return (acc + (std::int64_t{1} << (shift - 1))) >> shift;
}

struct RgbCodes {
  int r, g, b;
};

// One YUV pixel -> RGB codes.
HAZEFREE_HD constexpr RgbCodes yuv_to_rgb_depth(const YuvToRgbDepthI& k, int y, int u, int v) {
  const std::int64_t yy = static_cast<std::int64_t>(y - k.y_offset) * k.y_mul + kFixedHalf;
  const std::int64_t du = u - k.c_zero;
  const std::int64_t dv = v - k.c_zero;
  return {clamp_depth((yy + dv * k.r_cr) >> kFixedBits, k.max),
          clamp_depth((yy + du * k.g_cb + dv * k.g_cr) >> kFixedBits, k.max),
          clamp_depth((yy + du * k.b_cb) >> kFixedBits, k.max)};
}

// RGB codes -> luma code.
HAZEFREE_HD constexpr int rgb_to_luma_depth(const RgbToYuvDepthI& k, int r, int g, int b) {
  return clamp_depth(k.y_offset + fixed_round_64(static_cast<std::int64_t>(k.y_r) * r +
                                                     static_cast<std::int64_t>(k.y_g) * g +
                                                     static_cast<std::int64_t>(k.y_b) * b,
                                                 0),
                     k.max);
}

// Sums of R, G, B over the `count` (1, 2 or 4) pixels of a chroma block -> its U and V codes.
struct ChromaCodes {
  int u, v;
};
HAZEFREE_HD constexpr ChromaCodes rgb_sums_to_chroma_depth(const RgbToYuvDepthI& k,
                                                           std::int64_t sr, std::int64_t sg,
                                                           std::int64_t sb, int count) {
  const int count_log2 = count == 4 ? 2 : (count == 2 ? 1 : 0);
  return {clamp_depth(k.c_zero + fixed_round_64(k.cb_r * sr + k.cb_g * sg + k.cb_b * sb, count_log2),
                      k.max),
          clamp_depth(k.c_zero + fixed_round_64(k.cr_r * sr + k.cr_g * sg + k.cr_b * sb, count_log2),
                      k.max)};
}

}  // namespace hazefree::color
