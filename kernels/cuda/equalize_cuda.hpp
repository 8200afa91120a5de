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
// window.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "kernels/cuda/cuda_memory.hpp"
#include "kernels/cuda/dehaze_cuda.hpp"  // StateOrder
#include "common/image.hpp"
#include "common/params.hpp"

namespace hazefree::cuda {

// he_temporal history of one stream, shared by the lanes: 8-bit channels, the BITS index, and
// channels of depth 9..16 (wide_bins[c] = 2^depth bins of wide[c]).
struct HeHistory {
  float channel[3][256];
  float bits[4096];
  int has_channel[3];
  int has_bits;
  float wide[3][65536];
  int has_wide[3];
  int wide_bins[3];
};
void reset_he_history(HeHistory* d_history, cudaStream_t stream);

// One 8-bit plane on the device.
struct DevicePlaneU8 {
  std::uint8_t* data = nullptr;
  int width = 0, height = 0, stride = 0;
};

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

// One plane of 9..16-bit samples on the device: uint16 samples, `stride` samples between rows,
// the value stored << shift (P010/P016).
struct DevicePlaneU16 {
  std::uint16_t* data = nullptr;
  int width = 0, height = 0, stride = 0, shift = 0;
};

// A plane that rides along with the HE map at depth: copied from src, or filled with `value`.
struct WidePlaneCompanion {
  DevicePlaneU16 src, dst;  // width: samples per row
  bool fill = false;
  std::uint16_t value = 0;
};

// Global HE at depth 9..16 (SPEC 7, equalize_depth_cuda.cu): 2^depth bins counted in shared-memory
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

// AHE/CLAHE at depth 9..16 (SPEC 7, equalize_depth_cuda.cu): B = 2^min(depth, 12) bins in a
// two-level histogram (256 buckets of 16 bins), a warp per 32 output columns whose one window
// goes right along a row and left along the next. Each lane keeps eight buckets' counts in
// registers, moved by the tile's column bucket counts as the 8-bit kernel moves its bins; the
// window's fine bins (shared memory) move by the 2r + 1 entering and leaving samples (windows to
// 511, read from a column-major copy of the plane's bins; under CLAHE the samples also keep each
// bucket's clipped count, and the columns keep nothing), or for longer windows by the fine
// histograms of the two columns, bucket by bucket where they have samples. Tiles are cut to fill
// the resident blocks in one wave.
class AheDepthCuda {
 public:
  void apply(const DevicePlaneU16* src, const DevicePlaneU16* dst, int planes, int depth,
             const AheParams& params, bool limited, cudaStream_t stream);

 private:
  DeviceBuffer<std::uint16_t> fine_;    // per block: columns x B counts, zero between tiles
  DeviceBuffer<std::uint16_t> coarse_;  // per block: columns x 256 bucket counts, zero between tiles
  DeviceBuffer<std::uint16_t> columns_; // short windows: the planes' bins, column by column
  int sm_count_ = 0;
};

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
