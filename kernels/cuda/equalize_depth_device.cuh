// Helpers the equalization kernels at depth share (he_depth_cuda.cu, ahe_depth_cuda.cu,
// equalize_depth_cuda.cu): the GPU's multiprocessors, the final code of a LUT entry, the 2-D
// launch grid.
#pragma once

#include <cuda_runtime.h>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/equalize_rules.hpp"

namespace hazefree::cuda {

inline int current_sm_count() {
  int device = 0, count = 0;
  HAZEFREE_CUDA_CHECK(cudaGetDevice(&device));
  HAZEFREE_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
  return count;
}

__device__ __forceinline__ int final_code(int e, bool limited, int depth) {
  return limited ? equalize_rules::limited_range_code(e, depth) : e;
}

inline const dim3 kBlock2d(32, 8);
inline dim3 grid_2d(int width, int height, int depth = 1) {
  return dim3(div_up(width, kBlock2d.x), div_up(height, kBlock2d.y), depth);
}

}  // namespace hazefree::cuda
