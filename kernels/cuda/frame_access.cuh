// Device-side pixel access for the frame formats of common/image.hpp: reading one pixel as float
// RGB (the DCP path) or 8-bit RGB (the fixed-point path), with the expressions of
// kernels/cpu/color_convert.cpp and the constants of kernels/color_rules.hpp.
//
// Depth: the float path is templated on the storage of a sample, T = std::uint8_t (8 bits) or
// std::uint16_t (9 to 16 bits, value shifted up by FrameRef::shift for P010/P016), so that each
// kernel reads its frame's samples directly, with no conversion pass; load_rgb_f without T picks
// it at run time (for kernels that read few pixels).
#pragma once

#include <cstdint>

#include "kernels/color_rules.hpp"
#include "common/image.hpp"

namespace hazefree::cuda {

// Plane pointers and strides of a device frame, passed by value to kernels.
struct FrameRef {
  std::uint8_t* p0;
  std::uint8_t* p1;  // U (or nv12's UV)
  std::uint8_t* p2;  // V (nv12: UV + 1)
  int s0, s1;        // strides of plane 0 and of the chroma planes
  int width, height;
  int sx, sy;        // chroma shifts
  int cstep;         // 1 planar, 2 nv12 (in samples)
  int shift;         // the value's shift inside a stored sample (P010/P016), else 0
  PixelFormat format;
  bool yuv;          // has chroma planes
  bool wide;         // two-byte samples (depth > 8)
  int depth;         // bits per sample, 8..16
};

inline FrameRef frame_ref(const ImageView& f) {
  FrameRef r{};
  r.p0 = f.planes[0].data;
  r.s0 = f.planes[0].stride;
  r.width = f.width;
  r.height = f.height;
  r.format = f.format;
  r.cstep = 1;
  r.shift = sample_shift(f);
  r.yuv = is_yuv(f.format);
  r.wide = f.depth > 8;
  r.depth = f.depth;
  if (r.yuv) {
    r.sx = chroma_shift_x(f.format);
    r.sy = chroma_shift_y(f.format);
    r.p1 = f.planes[1].data;
    r.s1 = f.planes[1].stride;
    if (f.format == PixelFormat::nv12) {
      r.p2 = f.planes[1].data + sample_bytes(f.depth);
      r.cstep = 2;
    } else {
      r.p2 = f.planes[2].data;
    }
  }
  return r;
}

__device__ __forceinline__ float clamp01(float v) { return v < 0.f ? 0.f : (v > 1.f ? 1.f : v); }

// floor(v + 0.5) clamped to 0..max (the largest code at the frame's depth), as the CPU's
// round_code of the float path.
__device__ __forceinline__ int round_code(float v, float max) {
  const float r = floorf(__fadd_rn(v, 0.5f));
  return static_cast<int>(r < 0.f ? 0.f : (r > max ? max : r));
}

// The float path's decode coefficients of a frame (matrix, range and depth).
inline color::YuvToRgbF decode_coefficients_f(const ImageView& f) {
  return color::yuv_to_rgb_f(f.matrix, f.range, f.depth);
}
inline color::RgbToYuvF encode_coefficients_f(const ImageView& f) {
  return color::rgb_to_yuv_f(f.matrix, f.range, f.depth);
}

// Sample i of a row stored as T; 8-bit samples are never shifted.
template <typename T>
__device__ __forceinline__ int read_sample(const std::uint8_t* row, int i, int shift) {
  if constexpr (sizeof(T) == 1) {
    (void)shift;
    return row[i];
  } else {
    return reinterpret_cast<const T*>(row)[i] >> shift;
  }
}

template <typename T>
__device__ __forceinline__ void write_sample(std::uint8_t* row, int i, int code, int shift) {
  if constexpr (sizeof(T) == 1) {
    (void)shift;
    row[i] = static_cast<std::uint8_t>(code);
  } else {
    reinterpret_cast<T*>(row)[i] = static_cast<T>(code << shift);
  }
}

struct Rgb3f {
  float r, g, b;
};

// The chroma products of one chroma sample (cx, cy), shared by the pixels it covers.
struct ChromaTermsF {
  float r_v, g_u, g_v, b_u;  // v r_cr, u g_cb, v g_cr, u b_cb
};

template <typename T>
__device__ __forceinline__ ChromaTermsF chroma_terms_f(const FrameRef& f,
                                                       const color::YuvToRgbF& k, int cx, int cy) {
  const std::ptrdiff_t row = static_cast<std::ptrdiff_t>(cy) * f.s1;
  const int ci = cx * f.cstep;
  // Exact: codes and the chroma zero are integers below 2^16.
  const float u = static_cast<float>(read_sample<T>(f.p1 + row, ci, f.shift)) - k.c_zero;
  const float v = static_cast<float>(read_sample<T>(f.p2 + row, ci, f.shift)) - k.c_zero;
  return {__fmul_rn(v, k.r_cr), __fmul_rn(u, k.g_cb), __fmul_rn(v, k.g_cr), __fmul_rn(u, k.b_cb)};
}

// Float RGB in [0,1] of a YUV pixel from its luma code and its chroma sample's terms.
__device__ __forceinline__ Rgb3f yuv_pixel_rgb_f(int luma, const color::YuvToRgbF& k,
                                                 const ChromaTermsF& c) {
  const float yy = __fmul_rn(static_cast<float>(luma) - k.y_offset, k.y_mul);
  return {clamp01(__fadd_rn(yy, c.r_v)), clamp01(__fadd_rn(__fadd_rn(yy, c.g_u), c.g_v)),
          clamp01(__fadd_rn(yy, c.b_u))};
}

// Float RGB in [0,1] of pixel (x, y). Separate roundings (__fmul_rn/__fadd_rn) where the CPU
// evaluates a product and a sum apart: no fused multiply-add may change the bits.
// An RGB sample reads as v / max (IEEE division, as the CPU's v / M).
template <typename T>
__device__ __forceinline__ Rgb3f load_rgb_f(const FrameRef& f, const color::YuvToRgbF& k, int x,
                                            int y) {
  const std::uint8_t* row = f.p0 + static_cast<std::ptrdiff_t>(y) * f.s0;
  if (f.format == PixelFormat::rgb24) {
    return {read_sample<T>(row, 3 * x, f.shift) / k.max,
            read_sample<T>(row, 3 * x + 1, f.shift) / k.max,
            read_sample<T>(row, 3 * x + 2, f.shift) / k.max};
  }
  if (f.format == PixelFormat::gray8) {
    const float luma = static_cast<float>(read_sample<T>(row, x, f.shift));
    const float v = clamp01(__fmul_rn(luma - k.y_offset, k.y_mul));
    return {v, v, v};
  }
  return yuv_pixel_rgb_f(read_sample<T>(row, x, f.shift), k,
                         chroma_terms_f<T>(f, k, x >> f.sx, y >> f.sy));
}

// The same with the sample storage chosen at run time (one uniform branch per pixel).
__device__ __forceinline__ Rgb3f load_rgb_f(const FrameRef& f, const color::YuvToRgbF& k, int x,
                                            int y) {
  return f.wide ? load_rgb_f<std::uint16_t>(f, k, x, y) : load_rgb_f<std::uint8_t>(f, k, x, y);
}

struct Rgb3u {
  int r, g, b;
};

// 8-bit RGB of pixel (x, y), fixed point (bit-exact with frame_to_rgb_u8).
__device__ __forceinline__ Rgb3u load_rgb_u8(const FrameRef& f, const color::YuvToRgbI& k, int x,
                                             int y) {
  const std::uint8_t* row = f.p0 + static_cast<std::ptrdiff_t>(y) * f.s0;
  if (f.format == PixelFormat::rgb24) return {row[3 * x], row[3 * x + 1], row[3 * x + 2]};
  if (f.format == PixelFormat::gray8) {
    const int v = color::clamp_u8(((row[x] - k.y_offset) * k.y_mul + color::kFixedHalf) >>
                                  color::kFixedBits);
    return {v, v, v};
  }
  const std::ptrdiff_t ci = static_cast<std::ptrdiff_t>(y >> f.sy) * f.s1 + (x >> f.sx) * f.cstep;
  const std::int32_t yy = (row[x] - k.y_offset) * k.y_mul + color::kFixedHalf;
  const std::int32_t u = f.p1[ci] - color::kChromaZero;
  const std::int32_t v = f.p2[ci] - color::kChromaZero;
  return {color::clamp_u8((yy + v * k.r_cr) >> color::kFixedBits),
          color::clamp_u8((yy + u * k.g_cb + v * k.g_cr) >> color::kFixedBits),
          color::clamp_u8((yy + u * k.b_cb) >> color::kFixedBits)};
}

}  // namespace hazefree::cuda
