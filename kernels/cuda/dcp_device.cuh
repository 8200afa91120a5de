// Device helpers the DCP operators' kernels share: +inf for the minima, a float plane's rows,
// the 32x32 transpose tile, the atmospheric light's block and the per-pixel launch grid.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/cuda/dcp_planes.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/dcp_rules.hpp"

namespace hazefree::cuda {

constexpr float kInf = __builtin_huge_valf();

__device__ __forceinline__ float* plane_row(const DevicePlaneF& p, int y) {
  return p.data + static_cast<std::ptrdiff_t>(y) * p.stride;
}

// 32x32 pixel tiles of 32x8 threads, through a padded shared tile (the padding column keeps the
// column reads of the tile free of bank conflicts): the transposes of the chain.
constexpr int kTile = 32;
constexpr int kTileRows = 8;

// The atmospheric light's blocks (kernels/dcp_rules.hpp).
constexpr int kBlock = dcp::kAtmosphereBlock;

inline dim3 pixel_grid(int width, int height, dim3 block) {
  return dim3(div_up(width, block.x), div_up(height, block.y));
}

inline const dim3 kPixelBlock(32, 8);

}  // namespace hazefree::cuda
