// The atmospheric light on the GPU (kernels/cuda/atmosphere_cuda.cu).
#pragma once

#include <cuda_runtime.h>

#include "common/image.hpp"
#include "common/params.hpp"
#include "kernels/cuda/cuda_memory.hpp"
#include "kernels/cuda/dcp_planes.hpp"

namespace hazefree::cuda {

// Step 3 and 4 on the device: 32x32 block maxima, ranking, A^ as the double mean over the top
// blocks, then the inter-frame constraint.
class AtmosphereCuda {
 public:
  AtmosphereCuda();
  // Updates the stream's tracker `d_tracker` (shared by the lanes) and leaves this frame's copy
  // in frame_state(), which the later steps of the frame read (the next frame may already be
  // updating the tracker).
  void estimate_and_update(const DevicePlaneF& dark, const DevicePlaneF& grey,
                           const ImageView& d_frame, const DcpParams& params,
                           AtmosphereState* d_tracker, const StateOrder& order,
                           cudaStream_t stream);
  // The same from block maxima already in block_maxima() (written by
  // launch_grey_and_dark_channel): the ranking, A^ and the update.
  void update_from_block_maxima(const ImageView& d_frame, const DcpParams& params,
                                AtmosphereState* d_tracker, const StateOrder& order,
                                cudaStream_t stream);
  // The per-block maxima of a width x height frame (dark, grey, x, y as int bits; raster order
  // over the 32x32 block grid), sized on first use.
  float4* block_maxima(int width, int height);
  const AtmosphereState* frame_state() const { return frame_state_.get(); }
  // The dark channel's histogram of the frame (dcp::kHazeBins counts, SPEC 13): the dark-channel
  // kernel adds to it, the update reads it and leaves it zeroed for the next frame.
  // Null while the index is off (set_haze_index(false): the benchmark's chain without it, to
  // measure its cost; the index then stays 0 and the strength 1).
  unsigned* haze_histogram() { return haze_index_ ? haze_histogram_.get() : nullptr; }
  void set_haze_index(bool on) { haze_index_ = on; }
  // Number of blocks averaged for A^ at this size (host-side rule of kernels/dcp_rules.hpp).
  static int top_count(int width, int height, float fraction);

 private:
  DeviceBuffer<AtmosphereState> frame_state_;
  DeviceBuffer<float4> blocks_;  // dark, grey, x, y (as int bits)
  DeviceBuffer<unsigned> haze_histogram_;
  bool haze_index_ = true;
};

// Forgets the tracker's A (a new stream), on `stream`.
void reset_atmosphere(AtmosphereState* d_tracker, cudaStream_t stream);

}  // namespace hazefree::cuda
