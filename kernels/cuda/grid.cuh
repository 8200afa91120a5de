// Launch arithmetic shared by the CUDA kernels' files.
#pragma once

namespace hazefree::cuda {

// Blocks (or groups) of b needed to cover a items.
__host__ __device__ inline int div_up(int a, int b) { return (a + b - 1) / b; }

}  // namespace hazefree::cuda
