// Frame <-> planar RGB codes at depth 9..16 (SPEC 7), fixed point, for the equalization modes that
// go through RGB. The rules are those of kernels/color_fixed_rules.hpp (shared with the CUDA
// backend); the walk over the planes is that of the 8-bit path (kernels/cpu/color_convert.cpp):
// chroma upsampling replicates, downsampling rounds the block's exact chroma once.
#pragma once

#include <cstdint>

#include "common/image.hpp"

namespace hazefree::cpu {

// Planar RGB codes of depth d in the low bits of uint16 samples, `stride` samples between rows.
struct RgbPlanesU16 {
  std::uint16_t* r;
  std::uint16_t* g;
  std::uint16_t* b;
  int stride;
};

// A YUV frame (any layout, nv12 as P010/P016) or an rgb24 frame (rgb48) of depth 9..16 -> RGB
// codes of the same depth. Throws std::invalid_argument for an 8-bit or grey frame.
void frame_to_rgb_depth(const ImageView& in, RgbPlanesU16 rgb, int threads = 0);
// RGB codes of the frame's depth -> the frame (YUV or rgb48), fixed point.
void rgb_depth_to_frame(RgbPlanesU16 rgb, ImageView& out, int threads = 0);

}  // namespace hazefree::cpu
