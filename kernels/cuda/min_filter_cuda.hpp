// The exact min filter on the GPU (kernels/cuda/min_filter_cuda.cu).
#pragma once

#include <cuda_runtime.h>

#include "kernels/cuda/cuda_memory.hpp"
#include "kernels/cuda/dcp_planes.hpp"

namespace hazefree::cuda {

// Step 2 (and step 5's filter): exact running minimum over the (2r+1)^2 window clipped at the
// borders. Rows through a padded shared-memory transpose and the coalesced column kernel.
class MinFilterCuda {
 public:
  // dst = min filter of src (may alias). When `omega` > 0 the result is written as the raw
  // transmission 1 - omega * min (step 5 fused); with `omega_scale` (device memory: the auto
  // strength of SPEC 13), omega * *omega_scale.
  void apply(const DevicePlaneF& src, const DevicePlaneF& dst, int radius, cudaStream_t stream,
             float omega = 0.f);
  // The same with the source given transposed (src_t: dst.height wide, dst.width tall), as the
  // chain's per-pixel kernels write it: one transpose fewer.
  void apply_transposed(const DevicePlaneF& src_t, const DevicePlaneF& dst, int radius,
                        cudaStream_t stream, float omega = 0.f);
  // The same in the caller's memory: `scratch` (the row-filtered plane, transposed layout) and
  // `src_t` itself (consumed by the first pass, then reused for the plane transposed back).
  void apply_transposed_in_place(const DevicePlaneF& src_t, const DevicePlaneF& dst, int radius,
                                 float* scratch, cudaStream_t stream, float omega = 0.f,
                                 const float* omega_scale = nullptr);

 private:
  void run_transposed(const DevicePlaneF& src_t, const DevicePlaneF& dst, int radius, float* a,
                      float* b, cudaStream_t stream, float omega, const float* omega_scale);
  DeviceBuffer<float> input_t_, transposed_a_, transposed_b_;
};

}  // namespace hazefree::cuda
