// A processed frame as interleaved RGB for a program to consume (FrameReader, SPEC 7): rgb24
// rows of three samples, at 8 bits or at the frame's depth, by the frame's matrix and range.
// The rules are those of the backends' fixed-point colour paths (kernels/color_rules.hpp at 8
// bits, kernels/color_fixed_rules.hpp at depth): chroma replicated over the pixels it covers;
// grey is R = G = B (limited-range grey stretched as luma with neutral chroma); an 8-bit output
// of a deeper frame first takes every sample to 8 bits by common/sample_depth.hpp's rule (as
// --output-depth 8 does; RGB samples are full range whatever the tag). One rule per pixel,
// shared by both backends: the CPU's loop is kernels/cpu/rgb_output.cpp, the CUDA kernel
// kernels/cuda/rgb_output_cuda.cu; a backend offers it as FrameProcessor::process_to_rgb.
#pragma once

#include <cstdint>

#include "common/image.hpp"
#include "common/sample_depth.hpp"
#include "kernels/color_fixed_rules.hpp"
#include "kernels/color_rules.hpp"
#include "kernels/host_device.hpp"

namespace hazefree {

// Throws std::invalid_argument unless `rgb` is rgb24 of `in`'s size at 8 bits or at in's depth.
void check_rgb_output(const ImageView& in, const ImageView& rgb);

namespace rgb_output {

// The conversion of one frame to one output depth.
struct Rule {
  color::YuvToRgbI k8;       // 8-bit output
  color::YuvToRgbDepthI kd;  // output at the frame's depth (above 8 bits)
  int depth;                 // the frame's
  bool eight_bit;            // the output's depth is 8
  ColorRange range;          // the depth rule's range (RGB: full)
};

inline Rule rule_of(const ImageView& in, int out_depth) {
  Rule r{};
  r.k8 = color::yuv_to_rgb_i(in.matrix, in.range);
  if (in.depth > 8) r.kd = color::yuv_to_rgb_depth_i(in.matrix, in.range, in.depth);
  r.depth = in.depth;
  r.eight_bit = out_depth == 8;
  r.range = in.format == PixelFormat::rgb24 ? ColorRange::full : in.range;
  return r;
}

// A code of the frame as the 8-bit output takes it (codes above the depth's largest read as it).
HAZEFREE_HD inline int to_eight_bits(const Rule& r, int code) {
  const int top = max_code(r.depth);
  return convert_sample_depth(code < top ? code : top, r.depth, 8, r.range);
}

HAZEFREE_HD inline color::RgbCodes from_yuv(const Rule& r, int y, int u, int v) {
  if (!r.eight_bit) return color::yuv_to_rgb_depth(r.kd, y, u, v);
  const color::YuvToRgbI& k = r.k8;
  const std::int32_t yy = (to_eight_bits(r, y) - k.y_offset) * k.y_mul + color::kFixedHalf;
  const std::int32_t du = to_eight_bits(r, u) - color::kChromaZero;
  const std::int32_t dv = to_eight_bits(r, v) - color::kChromaZero;
  return {color::clamp_u8((yy + dv * k.r_cr) >> color::kFixedBits),
          color::clamp_u8((yy + du * k.g_cb + dv * k.g_cr) >> color::kFixedBits),
          color::clamp_u8((yy + du * k.b_cb) >> color::kFixedBits)};
}

HAZEFREE_HD inline color::RgbCodes from_grey(const Rule& r, int y) {
  int v;
  if (r.eight_bit) {
    const color::YuvToRgbI& k = r.k8;
    v = color::clamp_u8(((to_eight_bits(r, y) - k.y_offset) * k.y_mul + color::kFixedHalf) >> color::kFixedBits);
  } else {
    v = color::yuv_to_rgb_depth(r.kd, y, r.kd.c_zero, r.kd.c_zero).r;
  }
  return {v, v, v};
}

HAZEFREE_HD inline color::RgbCodes from_rgb(const Rule& r, int red, int green, int blue) {
  if (!r.eight_bit) return {red, green, blue};
  return {to_eight_bits(r, red), to_eight_bits(r, green), to_eight_bits(r, blue)};
}

// Plane pointers of a frame in host or device memory, by value.
struct Planes {
  const std::uint8_t* p0;
  const std::uint8_t* p1;  // U (nv12: UV)
  const std::uint8_t* p2;  // V (nv12: UV + one sample)
  int s0, s1, s2;          // strides
  int sx, sy;              // chroma shifts
  int cstep;               // samples between chroma pairs: 1 planar, 2 nv12
  int shift;               // the value's shift inside a stored sample (P010/P016)
  PixelFormat format;
};

inline Planes planes_of(const ImageView& in) {
  Planes p{};
  p.p0 = in.planes[0].data;
  p.s0 = in.planes[0].stride;
  p.format = in.format;
  p.shift = sample_shift(in);
  p.cstep = 1;
  if (is_yuv(in.format)) {
    p.sx = chroma_shift_x(in.format);
    p.sy = chroma_shift_y(in.format);
    p.p1 = in.planes[1].data;
    p.s1 = in.planes[1].stride;
    if (in.format == PixelFormat::nv12) {
      p.p2 = p.p1 + sample_bytes(in.depth);
      p.s2 = p.s1;
      p.cstep = 2;
    } else {
      p.p2 = in.planes[2].data;
      p.s2 = in.planes[2].stride;
    }
  }
  return p;
}

// Sample i of a row stored as T (uint8_t at 8 bits, uint16_t above).
template <typename T>
HAZEFREE_HD inline int sample_of(const std::uint8_t* row, int i, int shift) {
  return reinterpret_cast<const T*>(row)[i] >> shift;
}

// The RGB codes of pixel (x, y) of a frame stored as T.
template <typename T>
HAZEFREE_HD inline color::RgbCodes pixel(const Rule& r, const Planes& f, int x, int y) {
  const std::uint8_t* row = f.p0 + static_cast<std::ptrdiff_t>(y) * f.s0;
  if (f.format == PixelFormat::rgb24)
    return from_rgb(r, sample_of<T>(row, 3 * x, 0), sample_of<T>(row, 3 * x + 1, 0), sample_of<T>(row, 3 * x + 2, 0));
  if (f.format == PixelFormat::gray8) return from_grey(r, sample_of<T>(row, x, f.shift));
  const int cx = (x >> f.sx) * f.cstep, cy = y >> f.sy;
  return from_yuv(r, sample_of<T>(row, x, f.shift),
                  sample_of<T>(f.p1 + static_cast<std::ptrdiff_t>(cy) * f.s1, cx, f.shift),
                  sample_of<T>(f.p2 + static_cast<std::ptrdiff_t>(cy) * f.s2, cx, f.shift));
}

// Writes pixel x of an interleaved output row stored as O.
template <typename O>
HAZEFREE_HD inline void put(std::uint8_t* row, int x, const color::RgbCodes& c) {
  O* out = reinterpret_cast<O*>(row) + 3 * x;
  out[0] = static_cast<O>(c.r);
  out[1] = static_cast<O>(c.g);
  out[2] = static_cast<O>(c.b);
}

}  // namespace rgb_output

namespace cpu {

// `in` (any format, 8 to 16 bits) -> `rgb` (checked by check_rgb_output), `threads` OpenMP
// threads (0: all).
void frame_to_interleaved_rgb(const ImageView& in, const ImageView& rgb, int threads = 0);

}  // namespace cpu
}  // namespace hazefree
