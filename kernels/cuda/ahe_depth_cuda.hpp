// Sliding-window AHE/CLAHE at depth 9..16 on the GPU, and at 8 bits where it is the faster
// kernel (kernels/cuda/ahe_depth_cuda.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/params.hpp"
#include "kernels/cuda/cuda_memory.hpp"
#include "kernels/cuda/equalize_planes.hpp"

namespace hazefree::cuda {

// AHE/CLAHE at depth 8..16 (SPEC 7): B = 2^min(depth, 12) bins in a
// two-level histogram (256 buckets of 16 bins), a warp per 32 output columns whose one window
// goes right along a row and left along the next. Each lane keeps eight buckets' counts in
// registers, moved by the tile's column bucket counts as the 8-bit kernel moves its bins; the
// window's fine bins (shared memory) move by the 2r + 1 entering and leaving samples (windows to
// 511, read from a column-major copy of the plane's bins; under CLAHE the samples also keep each
// bucket's clipped count, and the columns keep nothing), or for longer windows by the fine
// histograms of the two columns, bucket by bucket where they have samples. Tiles are cut to fill
// the resident blocks in one wave.
struct AheDepthArgs;

class AheDepthCuda {
 public:
  void apply(const DevicePlaneU16* src, const DevicePlaneU16* dst, int planes, int depth,
             const AheParams& params, bool limited, cudaStream_t stream);
  // 8-bit planes (depth 8: 256 bins, the 8-bit rules' codes).
  void apply(const DevicePlaneU8* src, const DevicePlaneU8* dst, int planes, const AheParams& params,
             bool limited, cudaStream_t stream);

 private:
  template <typename Sample>
  void run(AheDepthArgs& a, int width, int height, int planes, int depth, const AheParams& params,
           bool limited, cudaStream_t stream);

  DeviceBuffer<std::uint16_t> fine_;    // per block: columns x B counts, zero between tiles
  DeviceBuffer<std::uint16_t> coarse_;  // per block: columns x 256 bucket counts, zero between tiles
  DeviceBuffer<std::uint16_t> columns_; // short windows: the planes' bins, column by column
  int sm_count_ = 0;
};

}  // namespace hazefree::cuda
