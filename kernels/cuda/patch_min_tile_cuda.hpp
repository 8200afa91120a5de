// The fused tile kernel of the DCP chain on the GPU (kernels/cuda/patch_min_tile_cuda.cu).
#pragma once

#include <cuda_runtime.h>

#include "common/image.hpp"
#include "kernels/cuda/dcp_planes.hpp"

namespace hazefree::cuda {

// Steps 1 and 2 in one kernel for patch radii up to kPatchTileMaxRadius (the chain's usual
// case): grey and the dark channel straight from the frame, per 64x64 tile with the van Herk /
// Gil-Werman passes in shared memory; bit-identical to the channel minimum through MinFilterCuda.
constexpr int kPatchTileMaxRadius = 16;
// With `block_maxima` (AtmosphereCuda::block_maxima), the kernel also writes step 3's 32x32
// block maxima, as AtmosphereCuda::estimate_and_update's first kernel would from the planes,
// and adds the dark channel's histogram to `haze_histogram` (SPEC 13; when not null).
void launch_grey_and_dark_channel(const ImageView& d_frame, int radius, const DevicePlaneF& grey,
                                  const DevicePlaneF& dark, float4* block_maxima,
                                  cudaStream_t stream, unsigned* haze_histogram = nullptr);

// Step 5 in one kernel for radii up to kPatchTileMaxRadius, as launch_grey_and_dark_channel:
// t~ = 1 - omega * min over the patch of min_c (I_c / A_c), A read from device memory.
void launch_raw_transmission(const ImageView& d_frame, const AtmosphereState* d_state, int radius,
                             float omega, const DevicePlaneF& out, cudaStream_t stream);

}  // namespace hazefree::cuda
