// Global HE and sliding-window AHE/CLAHE on the GPU (SPEC 4), bit-exact with the CPU backend:
// every rule comes from kernels/equalize_rules.hpp and kernels/color_rules.hpp.
//
// HE: privatised shared-memory histograms (for 8 bits, 32 lane sub-histograms per block and
// channel, one per bank) merged with global atomics; the last block to finish builds the LUT
// (block scan of the counts, or the sequential float rule under he_temporal) and clears the
// histogram for the next frame; a second kernel applies it. Nothing goes to the host.
// AHE/CLAHE: Perreault-Hebert column histograms per tile of 256 x kAheTileRows outputs, a warp
// per 32 output columns sliding the window histogram right (8 bins per lane), the start of each
// row moved down by the pixels entering and leaving: the cost per pixel does not depend on the
// window; each lane makes its own pixel's code once its warp's 32 windows are done. CLAHE at
// windows up to 31 goes to the sliding samples' kernel of the depths at 8 bits (AheDepthCuda),
// measured faster there (ahe_by_samples_8bit in equalize_cuda.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "kernels/cuda/ahe_depth_cuda.hpp"
#include "kernels/cuda/cuda_memory.hpp"
#include "kernels/cuda/dehaze_cuda.hpp"  // StateOrder
#include "kernels/cuda/equalize_planes.hpp"
#include "kernels/cuda/he_depth_cuda.hpp"
#include "common/image.hpp"
#include "common/params.hpp"

namespace hazefree::cuda {

// dst = AHE/CLAHE of src (one plane, or three with the same geometry). `limited`: map each
// code e to 16 + (219 e + 127) / 255. Scratch grows on demand (once per size).
class AheCuda {
 public:
  void apply(const DevicePlaneU8* src, const DevicePlaneU8* dst, int planes, const AheParams& params,
             bool limited, cudaStream_t stream);

 private:
  DeviceBuffer<std::uint16_t> columns_;
  int sm_count_ = 0;
};

// One plane of the HE map kernel: a LUT map (kind 0), a copy (1) or a fill with 128 (2).
struct HePlaneJob {
  const std::uint8_t* src;
  std::uint8_t* dst;
  int src_stride, dst_stride;
  int row_bytes, height;
  int kind;
  int lut;  // LUT channel of a map
};

struct HeArgs;  // the HE histogram kernels' arguments (equalize_cuda.cu)

// The HE and AHE chains of one lane (scratch planes, histogram, LUTs).
class CudaEqualizer {
 public:
  explicit CudaEqualizer(const ProcessingConfig& config);
  // d_in / d_out: device frames of the same format and size. `d_history`: the stream's
  // he_temporal state (HE only).
  void enqueue(const ImageView& d_in, const ImageView& d_out, HeHistory* d_history,
               const StateOrder& order, cudaStream_t stream);

 private:
  void he(const DevicePlaneU8* src, const DevicePlaneU8* dst, int channels, bool limited,
          int width, int height, HeHistory* d_history, const StateOrder& order,
          cudaStream_t stream);
  void bits(const DevicePlaneU8* planes, int width, int height, HeHistory* d_history,
            const StateOrder& order, cudaStream_t stream);
  // Frames of depth 9..16: the colour modes of the CPU's ColorRouter::run_wide.
  void enqueue_wide(const ImageView& d_in, const ImageView& d_out, HeHistory* d_history,
                    const StateOrder& order, cudaStream_t stream);
  // The histogram kernels' arguments for `channels` planes: the ROI's rectangle, the temporal
  // settings and this lane's histogram, ticket and LUTs.
  HeArgs he_args(const DevicePlaneU8* planes, int channels, int width, int height,
                 HeHistory* d_history) const;

  ProcessingConfig config_;
  std::vector<HePlaneJob> extra_jobs_;  // chroma planes copied/filled by the HE map kernel
  DeviceBuffer<std::uint8_t> scratch_;   // 6 planes: 3 in, 3 out
  DeviceBuffer<std::uint32_t> hist_;     // copies of 3 x 256 bins, or 4096, cleared by the LUT builder
  DeviceBuffer<unsigned> ticket_;        // blocks done, for the last-block LUT build
  DeviceBuffer<std::uint8_t> lut8_;      // 3 x 256
  DeviceBuffer<std::uint16_t> lut12_;    // 4096
  AheCuda ahe_;
  DeviceBuffer<std::uint16_t> wide_scratch_;  // depth 9..16: 6 planes, 3 in, 3 out
  HeDepthCuda he_depth_;
  AheDepthCuda ahe_depth_;
  int sm_count_ = 0;
  int he_blocks_per_sm_ = 1;  // resident blocks of the 8-bit histogram kernel per multiprocessor
};

}  // namespace hazefree::cuda
