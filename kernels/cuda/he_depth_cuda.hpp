// Global HE at depth 9..16 on the GPU (kernels/cuda/he_depth_cuda.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/params.hpp"
#include "kernels/cuda/cuda_memory.hpp"
#include "kernels/cuda/dcp_planes.hpp"  // StateOrder
#include "kernels/cuda/equalize_planes.hpp"

namespace hazefree::cuda {

// A plane that rides along with the HE map at depth: copied from src, or filled with `value`.
struct WidePlaneCompanion {
  DevicePlaneU16 src, dst;  // width: samples per row
  bool fill = false;
  std::uint16_t value = 0;
};

// Global HE at depth 9..16 (SPEC 7): 2^depth bins counted in shared-memory
// slices of 8192 bins (the bin range split over blockIdx.z, so 16 bits takes eight slices),
// merged with global atomics; the block that finishes last builds the LUTs (a block scan), or
// under he_temporal one block per channel runs the sequential float rule; a map kernel applies
// them and copies or fills up to two companion planes (the chroma of the luma and grey modes).
class HeDepthCuda {
 public:
  void apply(const DevicePlaneU16* src, const DevicePlaneU16* dst, int channels, int depth,
             bool limited, const HeParams& params, HeHistory* d_history, const StateOrder& order,
             cudaStream_t stream, const WidePlaneCompanion* companions = nullptr, int companion_count = 0);

 private:
  DeviceBuffer<std::uint32_t> hist_;  // channels x 2^depth, zero between frames
  DeviceBuffer<std::uint16_t> lut_;   // channels x 2^depth
  DeviceBuffer<unsigned> ticket_;     // blocks done, for the last-block LUT build
  int sm_count_ = 0;
};

}  // namespace hazefree::cuda
