// "Which block finished last": the kernels whose last block builds a LUT from every block's
// global sums (the HE histogram kernels at 8 bits and at depth).
#pragma once

namespace hazefree::cuda {

// True in every thread of the block that finishes last of `blocks` (counted on `ticket`, which
// the caller resets): that block sees the other blocks' global writes (read them with __ldcg).
__device__ __forceinline__ bool finished_last(unsigned* ticket, unsigned blocks) {
  __shared__ bool s_last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) s_last = atomicAdd(ticket, 1u) == blocks - 1;
  __syncthreads();
  if (s_last) __threadfence();
  return s_last;
}

}  // namespace hazefree::cuda
