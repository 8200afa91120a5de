// The CUDA backend's interleaved RGB output (kernels/rgb_output.hpp): one thread per pixel, the
// rule shared with the CPU's loop.
#pragma once

#include <cuda_runtime.h>

#include "common/image.hpp"

namespace hazefree::cuda {

// Device frame `d_in` -> device rgb24 frame `d_rgb` (at 8 bits or at d_in's depth; checked by
// check_rgb_output), on `stream`.
void launch_frame_to_interleaved_rgb(const ImageView& d_in, const ImageView& d_rgb, cudaStream_t stream);

}  // namespace hazefree::cuda
