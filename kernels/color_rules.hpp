// The colour conversion rules shared by every backend (SPEC 3): the matrix weights, the range
// scales, and the derived float and fixed-point coefficients. The CUDA kernels include this file
// so that they use bit-identical constants.
//
// Conventions (8-bit codes, chroma centred on 128):
//   limited range: Y = 16 + 219 Y', C = 128 + 224 C';  full range: Y = 255 Y', C = 128 + 255 C'
//   Y' = kr R + kg G + kb B, Cb' = (B - Y') / (2 (1 - kb)), Cr' = (R - Y') / (2 (1 - kr))
// with R, G, B in [0,1] and kg = 1 - kr - kb.
//
// Float path (DCP): decode R = (Y - y_offset) * y_mul + (V - 128) * r_cr, ... in float, clamped
// to [0,1]; encode Y = y_offset + y_r R + y_g G + y_b B (float, in codes), rounded with
// floor(v + 0.5) and clamped to 0..255. Because R, G, B are clamped to [0,1] first, a limited
// range encode lands in 16..235 / 16..240 by construction; only the 0..255 clamp is applied.
// At depth d the same expressions run with the scales of float_scales() (0..M for 0..255).
//
// Fixed-point path (8-bit modes): every coefficient carries kFixedBits = 16 fractional bits
// (value * 65536 rounded half away from zero). Results are (sum + 2^15) >> 16 with an arithmetic
// shift (floor), then clamped to 0..255. The encode coefficients are adjusted so that their sums
// are exact: y_r + y_g + y_b = round(y_scale / 255 * 2^16) (white maps to 235 or 255) and the
// chroma rows sum to zero (any grey maps to exactly 128).
#pragma once

#include <cstdint>

#include "kernels/host_device.hpp"
#include "common/image.hpp"

namespace hazefree::color {

inline constexpr int kFixedBits = 16;
inline constexpr int kFixedOne = 1 << kFixedBits;
inline constexpr int kFixedHalf = 1 << (kFixedBits - 1);
inline constexpr int kChromaZero = 128;

struct MatrixWeights {
  double kr, kb;
};

HAZEFREE_HD constexpr MatrixWeights matrix_weights(ColorMatrix matrix) {
  switch (matrix) {
    case ColorMatrix::bt709: return {0.2126, 0.0722};
    case ColorMatrix::bt2020: return {0.2627, 0.0593};
    case ColorMatrix::bt601:
    default: return {0.299, 0.114};
  }
}

struct RangeScales {
  int y_offset;  // 16 or 0
  int y_scale;   // 219 or 255
  int c_scale;   // 224 or 255
};

HAZEFREE_HD constexpr RangeScales range_scales(ColorRange range) {
  return range == ColorRange::full ? RangeScales{0, 255, 255} : RangeScales{16, 219, 224};
}

// Round half away from zero; constexpr (std::lround is not in C++17).
HAZEFREE_HD constexpr int round_to_int(double v) {
  return static_cast<int>(v >= 0.0 ? v + 0.5 : v - 0.5);
}

// ---- float coefficients -----------------------------------------------------------------

// The code scales of the float path at depth d (SPEC 7), s = d - 8, M = 2^d - 1:
//   limited range: Y = (16 << s) + (219 << s) Y', C = (128 << s) + (224 << s) C'
//   full range:    Y = M Y',                     C = (128 << s) + M C'
// At d = 8 these are the 8-bit constants above, so 8-bit results do not change.
struct FloatScales {
  double y_offset, y_scale, c_zero, c_scale, max;
};

HAZEFREE_HD constexpr FloatScales float_scales(ColorRange range, int depth) {
  const int s = depth - 8;
  const double max = static_cast<double>((1 << depth) - 1);
  const double c_zero = static_cast<double>(kChromaZero << s);
  if (range == ColorRange::full) return {0.0, max, c_zero, max, max};
  return {static_cast<double>(16 << s), static_cast<double>(219 << s), c_zero,
          static_cast<double>(224 << s), max};
}

// YCbCr codes -> RGB in [0,1] (before the clamp):
//   R = (Y - y_offset) * y_mul + (V - c_zero) * r_cr
//   G = (Y - y_offset) * y_mul + (U - c_zero) * g_cb + (V - c_zero) * g_cr
//   B = (Y - y_offset) * y_mul + (U - c_zero) * b_cb
// An RGB sample v reads as v / max (max = M as a float; 255 at 8 bits).
struct YuvToRgbF {
  float y_offset, y_mul, r_cr, g_cb, g_cr, b_cb;
  float c_zero, max;
};

HAZEFREE_HD constexpr YuvToRgbF yuv_to_rgb_f(ColorMatrix matrix, ColorRange range,
                                             int depth = 8) {
  const MatrixWeights w = matrix_weights(matrix);
  const FloatScales s = float_scales(range, depth);
  const double kg = 1.0 - w.kr - w.kb;
  const double c = 1.0 / s.c_scale;
  return {static_cast<float>(s.y_offset), static_cast<float>(1.0 / s.y_scale),
          static_cast<float>(2.0 * (1.0 - w.kr) * c),
          static_cast<float>(-2.0 * w.kb * (1.0 - w.kb) / kg * c),
          static_cast<float>(-2.0 * w.kr * (1.0 - w.kr) / kg * c),
          static_cast<float>(2.0 * (1.0 - w.kb) * c),
          static_cast<float>(s.c_zero), static_cast<float>(s.max)};
}

// RGB in [0,1] -> codes (before rounding):
//   Y = y_offset + y_r R + y_g G + y_b B,  U = c_zero + cb_r R + cb_g G + cb_b B,  V likewise;
// an RGB sample is v * max. Every code is rounded with floor(v + 0.5) and clamped to 0..max.
struct RgbToYuvF {
  float y_offset, y_r, y_g, y_b, cb_r, cb_g, cb_b, cr_r, cr_g, cr_b;
  float c_zero, max;
};

HAZEFREE_HD constexpr RgbToYuvF rgb_to_yuv_f(ColorMatrix matrix, ColorRange range,
                                             int depth = 8) {
  const MatrixWeights w = matrix_weights(matrix);
  const FloatScales s = float_scales(range, depth);
  const double kg = 1.0 - w.kr - w.kb;
  const double cb = s.c_scale / (2.0 * (1.0 - w.kb));
  const double cr = s.c_scale / (2.0 * (1.0 - w.kr));
  return {static_cast<float>(s.y_offset),
          static_cast<float>(s.y_scale * w.kr),
          static_cast<float>(s.y_scale * kg),
          static_cast<float>(s.y_scale * w.kb),
          static_cast<float>(-w.kr * cb),
          static_cast<float>(-kg * cb),
          static_cast<float>((1.0 - w.kb) * cb),
          static_cast<float>((1.0 - w.kr) * cr),
          static_cast<float>(-kg * cr),
          static_cast<float>(-w.kb * cr),
          static_cast<float>(s.c_zero),
          static_cast<float>(s.max)};
}

// ---- fixed-point coefficients (kFixedBits fractional bits) ------------------------------

// YCbCr codes -> RGB codes: R = clamp(((Y - y_offset) * y_mul + (V - 128) * r_cr + half) >> 16)
struct YuvToRgbI {
  int y_offset, y_mul, r_cr, g_cb, g_cr, b_cb;
};

HAZEFREE_HD constexpr YuvToRgbI yuv_to_rgb_i(ColorMatrix matrix, ColorRange range) {
  const MatrixWeights w = matrix_weights(matrix);
  const RangeScales s = range_scales(range);
  const double kg = 1.0 - w.kr - w.kb;
  const double c = 255.0 / s.c_scale * kFixedOne;
  return {s.y_offset,
          round_to_int(255.0 / s.y_scale * kFixedOne),
          round_to_int(2.0 * (1.0 - w.kr) * c),
          round_to_int(-2.0 * w.kb * (1.0 - w.kb) / kg * c),
          round_to_int(-2.0 * w.kr * (1.0 - w.kr) / kg * c),
          round_to_int(2.0 * (1.0 - w.kb) * c)};
}

// RGB codes -> YCbCr codes: Y = y_offset + ((y_r R + y_g G + y_b B + half) >> 16), U = 128 + ...
// y_g, cb_g and cr_g absorb the rounding so that the rows have exact sums (see above).
struct RgbToYuvI {
  int y_offset, y_r, y_g, y_b, cb_r, cb_g, cb_b, cr_r, cr_g, cr_b;
};

HAZEFREE_HD constexpr RgbToYuvI rgb_to_yuv_i(ColorMatrix matrix, ColorRange range) {
  const MatrixWeights w = matrix_weights(matrix);
  const RangeScales s = range_scales(range);
  const double kg = 1.0 - w.kr - w.kb;
  const double y = s.y_scale / 255.0 * kFixedOne;
  const double cb = s.c_scale / 255.0 / (2.0 * (1.0 - w.kb)) * kFixedOne;
  const double cr = s.c_scale / 255.0 / (2.0 * (1.0 - w.kr)) * kFixedOne;
  const int y_r = round_to_int(w.kr * y), y_b = round_to_int(w.kb * y);
  const int y_sum = round_to_int(y);
  const int cb_r = round_to_int(-w.kr * cb), cb_b = round_to_int((1.0 - w.kb) * cb);
  const int cr_r = round_to_int((1.0 - w.kr) * cr), cr_b = round_to_int(-w.kb * cr);
  (void)kg;
  return {s.y_offset, y_r, y_sum - y_r - y_b, y_b, cb_r, -cb_r - cb_b, cb_b,
          cr_r, -cr_r - cr_b, cr_b};
}

// Rounded fixed-point result of a sum of `count` pixels (count 1, 2 or 4: a chroma block), i.e.
// round(acc / (count * 2^16)) with floor semantics for the half: (acc + half) >> shift.
HAZEFREE_HD constexpr int fixed_round(std::int32_t acc, int count_log2) {
  const int shift = kFixedBits + count_log2;
  return static_cast<int>((acc + (std::int32_t{1} << (shift - 1))) >> shift);
}

HAZEFREE_HD constexpr std::uint8_t clamp_u8(int v) {
  return static_cast<std::uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

}  // namespace hazefree::color
