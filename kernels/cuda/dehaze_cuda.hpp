// The dark channel prior chain on the GPU (SPEC 3), operator by operator (so that the tests can
// hold each one against its CPU twin in kernels/dehaze_ops.hpp) and as the per-frame chain
// CudaDehazer. Every operator only enqueues work on the given stream; workspaces are sized on
// the first call for a frame size and reused.
//
// Depth (SPEC 7): every kernel that reads or writes the frame is instantiated for one-byte and
// two-byte samples (kernels/cuda/frame_access.cuh), so a 10-bit frame goes through the same
// kernels as an 8-bit one, reading twice the bytes of the frame and nothing more.
//
// One pair of files per operator: dcp_pixels_cuda (grey, channel minimum, recovery),
// patch_min_tile_cuda (the fused tile kernel), min_filter_cuda, atmosphere_cuda,
// guided_filter_cuda; their shared device helpers in dcp_device.cuh, the planes and state they
// pass in dcp_planes.hpp.
//
// Numerics: the DCP kernel files are compiled with -fmad=false so that the shared rules of
// kernels/dcp_rules.hpp and kernels/color_rules.hpp round exactly as on the CPU (which never
// contracts a*b+c). The guided filter keeps the CPU's precision plan (double prefix and running
// sums, means rounded to float, a and b in double).
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "common/image.hpp"
#include "common/params.hpp"
#include "kernels/cuda/atmosphere_cuda.hpp"
#include "kernels/cuda/cuda_memory.hpp"
#include "kernels/cuda/dcp_pixels_cuda.hpp"
#include "kernels/cuda/dcp_planes.hpp"
#include "kernels/cuda/device_frame.hpp"
#include "kernels/cuda/guided_filter_cuda.hpp"
#include "kernels/cuda/min_filter_cuda.hpp"
#include "kernels/cuda/patch_min_tile_cuda.hpp"
#include "kernels/processor.hpp"

namespace hazefree::cuda {

// The whole chain on one stream, over device frames. Stage boundaries are marked with events
// when timing is on.
class CudaDehazer {
 public:
  explicit CudaDehazer(const DcpParams& params);
  // d_in / d_out: device frames of the same format and size.
  void enqueue(const ImageView& d_in, const ImageView& d_out, AtmosphereState* d_tracker,
               const StateOrder& order, cudaStream_t stream);
  // Steps 1 and 2 of the chain alone: the dark channel, then the frame's A^ and haze estimate
  // with the state stepped in d_tracker (frame_state()). What a frame's estimate needs (a job's
  // analysis, CudaProcessor::estimate); the transmission, the guided filter and the recovery,
  // three quarters of the chain's work, are left out.
  void enqueue_light(const ImageView& d_in, AtmosphereState* d_tracker, const StateOrder& order,
                     cudaStream_t stream);
  const AtmosphereState* frame_state() const { return atmosphere_.frame_state(); }
  // Stage markers: when set (stages + 1 events), the chain records them between its stages.
  void set_markers(const std::vector<cudaEvent_t>* markers) { markers_ = markers; }
  // The benchmark's chain without the haze index (AtmosphereCuda::set_haze_index).
  void set_haze_index(bool on) { atmosphere_.set_haze_index(on); }
  static const std::vector<std::string>& stage_names();

 private:
  void mark(int i, cudaStream_t stream);
  void ensure(int width, int height);
  DcpParams params_;
  int width_ = 0, height_ = 0, stride_ = 0;
  // One workspace of equal planes (each large enough for the normal or the transposed layout):
  // grey, work, dark, transposed, and for the exact guided filter two or three more. Stages
  // reuse the planes earlier stages are done with (it was 140 MB per 1080p lane with a buffer
  // per purpose; H200, 2026-11-21).
  enum Plane { kGrey, kWork, kDark, kTransposed, kExtra0, kExtra1, kExtra2 };
  // Up to 1080p the guided filter's last pass recomputes the guide from the frame, so b can take
  // the grey plane: 60 MB per 1080p lane instead of 68, for 6 us more (0.228 -> 0.234 ms). Above
  // that the plane is kept: at 4K the recomputation cost 31 us (0.772 -> 0.803 ms) and memory
  // is not short there (H200, 2026-11-21).
  static constexpr long kRecomputeGuideMaxPixels = 1920L * 1088L;
  bool recompute_guide_ = false;
  std::size_t plane_floats_ = 0;
  DeviceBuffer<float> planes_;
  float* plane(Plane p) const { return planes_.get() + plane_floats_ * p; }
  // The planes steps 1 to 3 name, for a w x h frame (ensure() first).
  struct ChainPlanes {
    DevicePlaneF grey, work, dark, work_t;
  };
  ChainPlanes chain_planes(int w, int h) const;
  MinFilterCuda min_filter_;
  AtmosphereCuda atmosphere_;
  GuidedFilterCuda guided_;
  const std::vector<cudaEvent_t>* markers_ = nullptr;
};

}  // namespace hazefree::cuda
