// The DCP chain's per-pixel kernels on the GPU (kernels/cuda/dcp_pixels_cuda.cu).
#pragma once

#include <cuda_runtime.h>

#include "common/image.hpp"
#include "common/params.hpp"
#include "kernels/cuda/dcp_planes.hpp"

namespace hazefree::cuda {

// Step 1 and the input of step 2 for patch radii above kPatchTileMaxRadius: grey guide and
// per-pixel channel minimum, from the frame; the minimum is written transposed (height x width
// plane), as the min filter's row pass takes it.
void launch_grey_and_channel_min_transposed(const ImageView& d_frame, const DevicePlaneF& grey,
                                            const DevicePlaneF& channel_min_t, cudaStream_t stream);

// The raw-transmission input of step 5: min_c(I_c / A_c) with A read from device memory,
// written transposed like launch_grey_and_channel_min_transposed.
void launch_normalised_channel_min_transposed(const ImageView& d_frame,
                                              const AtmosphereState* d_state,
                                              const DevicePlaneF& out_t, cudaStream_t stream);

// Steps 7 to 9 and the conversion back to the frame's format.
void launch_recover_to_frame(const ImageView& d_in, const DevicePlaneF& transmission,
                             const AtmosphereState* d_state, const DcpParams& params,
                             const ImageView& d_out, cudaStream_t stream);

// Frame <-> float RGB planes on the device (the kernels of the colour-conversion operator).
void launch_frame_to_rgb_f32(const ImageView& d_frame, const DevicePlaneF& r,
                             const DevicePlaneF& g, const DevicePlaneF& b, cudaStream_t stream);

}  // namespace hazefree::cuda
