// The channel planes that HE and AHE/CLAHE equalize on the GPU, at 8 bits (equalize_cuda.cu) and
// at depth (equalize_depth_cuda.cu): what they hold, and a pixel's R, G, B read back from them.
#pragma once

#include <cstddef>

#include "kernels/cuda/frame_access.cuh"
#include "kernels/equalize_rules.hpp"

namespace hazefree::cuda {

enum class ChannelKind : int {
  rgb,    // R, G, B (YUV: fixed point; rgb24/rgb48: as stored; gray8: replicated)
  ycrcb,  // rgb24/rgb48 luma mode: OpenCV's YCrCb, Y equalized
  grey,   // rgb24/rgb48 grey mode: OpenCV's grey
};

// The output pixels of one thread of a kernel writing the channels back: the block of one
// chroma sample (bx, by) of a YUV frame, else the one pixel; `inside` is false past the frame.
struct OutputBlock {
  int bx, by, x0, y0, x1, y1;
  bool inside;
};
__device__ __forceinline__ OutputBlock output_block(const FrameRef& out) {
  OutputBlock b{};
  b.bx = blockIdx.x * blockDim.x + threadIdx.x;
  b.by = blockIdx.y * blockDim.y + threadIdx.y;
  const int sx = out.yuv ? out.sx : 0, sy = out.yuv ? out.sy : 0;
  b.x0 = b.bx << sx;
  b.y0 = b.by << sy;
  b.inside = b.x0 < out.width && b.y0 < out.height;
  b.x1 = min(out.width, (b.bx + 1) << sx);
  b.y1 = min(out.height, (b.by + 1) << sy);
  return b;
}

// R, G, B of the sample at offset o of the equalized channels q0..q2 (c1, c2: Cr and Cb kept
// from the conversion to channels, ycrcb kind), by the 8-bit rules (one-byte samples) or those
// of `depth`.
template <typename Sample>
__device__ __forceinline__ equalize_rules::Rgb channels_rgb(ChannelKind kind, const Sample* q0,
                                                            const Sample* q1, const Sample* q2,
                                                            const Sample* c1, const Sample* c2,
                                                            std::ptrdiff_t o, int depth) {
  if (kind == ChannelKind::rgb) return {q0[o], q1[o], q2[o]};
  if (kind == ChannelKind::ycrcb) {
    if constexpr (sizeof(Sample) == 1) return equalize_rules::ycrcb_to_rgb(q0[o], c1[o], c2[o]);
    else return equalize_rules::ycrcb_to_rgb_depth(q0[o], c1[o], c2[o], depth);
  }
  return {q0[o], q0[o], q0[o]};
}

}  // namespace hazefree::cuda
