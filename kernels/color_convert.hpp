// Colour conversion between the frame formats of image.hpp and planar RGB (SPEC 3):
// the stream's matrix and range, chroma upsampling by replication, downsampling by the rounded
// average of each 2x2 (or 2x1) block, partial blocks at odd edges averaging what exists.
// rgb24 frames convert without any matrix (R, G, B taken as they are); gray8 gives R=G=B.
#pragma once

#include <cstdint>

#include "common/image.hpp"

namespace hazefree {

// Coefficients of one matrix/range pair, for float and fixed-point use.
struct YuvCoefficients {
  float kr, kb;           // luma weights of R and B (G = 1 - kr - kb)
  float y_offset;         // 16 (limited) or 0 (full), in 8-bit codes
  float y_scale;          // 219 or 255
  float c_scale;          // 224 or 255
};
YuvCoefficients yuv_coefficients(ColorMatrix matrix, ColorRange range);

// Planar float RGB in [0,1], `stride` floats between rows, full frame size.
struct RgbPlanesF {
  float* r;
  float* g;
  float* b;
  int stride;
};
// Planar 8-bit RGB, `stride` bytes between rows, full frame size.
struct RgbPlanesU8 {
  std::uint8_t* r;
  std::uint8_t* g;
  std::uint8_t* b;
  int stride;
};

namespace cpu {

// Frame -> float RGB (in [0,1], clamped), at the frame's depth (8 to 16 bits, P010/P016 nv12
// included; codes normalised as SPEC 7 says). `threads`: OpenMP threads, 0 = all.
void frame_to_rgb_f32(const ImageView& in, RgbPlanesF rgb, int threads = 0);
// Float RGB -> frame with rounding to the nearest code at the frame's depth (values clamped to
// the legal code range 0..2^depth - 1).
void rgb_f32_to_frame(RgbPlanesF rgb, ImageView& out, int threads = 0);

// Frame -> 8-bit RGB, fixed-point integer arithmetic (bit-exact on every backend).
void frame_to_rgb_u8(const ImageView& in, RgbPlanesU8 rgb, int threads = 0);
// 8-bit RGB -> frame, fixed-point integer arithmetic.
void rgb_u8_to_frame(RgbPlanesU8 rgb, ImageView& out, int threads = 0);

}  // namespace cpu
}  // namespace hazefree
