// The dark channel prior chain on the GPU (SPEC 3), operator by operator (so that the tests can
// hold each one against its CPU twin in kernels/dehaze_ops.hpp) and as the per-frame chain
// CudaDehazer. Every operator only enqueues work on the given stream; workspaces are sized on
// the first call for a frame size and reused.
//
// Depth (SPEC 7): every kernel that reads or writes the frame is instantiated for one-byte and
// two-byte samples (kernels/cuda/frame_access.cuh), so a 10-bit frame goes through the same
// kernels as an 8-bit one, reading twice the bytes of the frame and nothing more.
//
// Numerics: kernels/cuda/dehaze_cuda.cu is compiled with -fmad=false so that the shared rules of
// kernels/dcp_rules.hpp and kernels/color_rules.hpp round exactly as on the CPU (which never
// contracts a*b+c). The guided filter keeps the CPU's precision plan (double prefix and running
// sums, means rounded to float, a and b in double).
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_memory.hpp"
#include "kernels/cuda/device_frame.hpp"
#include "common/image.hpp"
#include "common/params.hpp"
#include "kernels/processor.hpp"

namespace hazefree::cuda {

// A float plane in device memory, `stride` floats between rows.
struct DevicePlaneF {
  float* data = nullptr;
  int width = 0;
  int height = 0;
  int stride = 0;
};

// Padded row stride (floats) used for the chain's planes.
inline int float_stride(int width) { return (width + 31) / 32 * 32; }

// Step 1 and the input of step 2 for patch radii above kPatchTileMaxRadius: grey guide and
// per-pixel channel minimum, from the frame; the minimum is written transposed (height x width
// plane), as the min filter's row pass takes it.
void launch_grey_and_channel_min_transposed(const ImageView& d_frame, const DevicePlaneF& grey,
                                            const DevicePlaneF& channel_min_t, cudaStream_t stream);

// Steps 1 and 2 in one kernel for patch radii up to kPatchTileMaxRadius (the chain's usual
// case): grey and the dark channel straight from the frame, per 64x64 tile with the van Herk /
// Gil-Werman passes in shared memory; bit-identical to the channel minimum through MinFilterCuda.
constexpr int kPatchTileMaxRadius = 16;
// With `block_maxima` (AtmosphereCuda::block_maxima), the kernel also writes step 3's 32x32
// block maxima, as AtmosphereCuda::estimate_and_update's first kernel would from the planes.
void launch_grey_and_dark_channel(const ImageView& d_frame, int radius, const DevicePlaneF& grey,
                                  const DevicePlaneF& dark, float4* block_maxima,
                                  cudaStream_t stream);

// Step 2 (and step 5's filter): exact running minimum over the (2r+1)^2 window clipped at the
// borders. Rows through a padded shared-memory transpose and the coalesced column kernel.
class MinFilterCuda {
 public:
  // dst = min filter of src (may alias). When `omega` > 0 the result is written as the raw
  // transmission 1 - omega * min (step 5 fused).
  void apply(const DevicePlaneF& src, const DevicePlaneF& dst, int radius, cudaStream_t stream,
             float omega = 0.f);
  // The same with the source given transposed (src_t: dst.height wide, dst.width tall), as the
  // chain's per-pixel kernels write it: one transpose fewer.
  void apply_transposed(const DevicePlaneF& src_t, const DevicePlaneF& dst, int radius,
                        cudaStream_t stream, float omega = 0.f);
  // The same in the caller's memory: `scratch` (the row-filtered plane, transposed layout) and
  // `src_t` itself (consumed by the first pass, then reused for the plane transposed back).
  void apply_transposed_in_place(const DevicePlaneF& src_t, const DevicePlaneF& dst, int radius,
                                 float* scratch, cudaStream_t stream, float omega = 0.f);

 private:
  void run_transposed(const DevicePlaneF& src_t, const DevicePlaneF& dst, int radius, float* a,
                      float* b, cudaStream_t stream, float omega);
  DeviceBuffer<float> input_t_, transposed_a_, transposed_b_;
};

// Step 3 and 4 on the device: 32x32 block maxima, ranking, A^ as the double mean over the top
// blocks, then the inter-frame constraint. Nothing returns to the host per frame: A lives in
// device memory and the later kernels read it there.
struct AtmosphereState {
  float value[3];     // A_n, used by steps 5 to 8
  float estimate[3];  // A^_n
  int has_value;      // 0 before the first frame (or after reset)
  int last_cut;
};

// Orders the one step that carries state from frame to frame (A, or the HE history) between
// lanes: the step waits for `wait` (the previous frame's step) and records `done` after itself.
// Both null when frames run on one stream.
struct StateOrder {
  cudaEvent_t wait = nullptr;
  cudaEvent_t done = nullptr;
};

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
  // Number of blocks averaged for A^ at this size (host-side rule of kernels/dcp_rules.hpp).
  static int top_count(int width, int height, float fraction);

 private:
  DeviceBuffer<AtmosphereState> frame_state_;
  DeviceBuffer<float4> blocks_;  // dark, grey, x, y (as int bits)
};

// Forgets the tracker's A (a new stream), on `stream`.
void reset_atmosphere(AtmosphereState* d_tracker, cudaStream_t stream);

// Step 6: the guided filter, exact (subsample 1) or fast (subsample > 1), on the CPU's
// geometry (kernels/dcp_rules.hpp). `output` may alias `input`.
class GuidedFilterCuda {
 public:
  // Planes of the caller's that the exact filter may use instead of its own: four for the
  // horizontal sums and one for b (each of the guide's size and stride). `a` goes into the
  // input plane, whose values the first pass has consumed by then. With `guide_frame` (the
  // frame the guide is the grey of), b goes into the guide's plane and the last pass recomputes
  // the guide from the frame, so `b` is not needed.
  struct Scratch {
    float* horizontal[4];
    float* b;
    const ImageView* guide_frame;
  };
  void apply(const DevicePlaneF& guide, const DevicePlaneF& input, const DevicePlaneF& output,
             int radius, float eps, int subsample, cudaStream_t stream, const Scratch* scratch = nullptr);

 private:
  // mean(a), mean(b) into coeff_; or, with `output`, q = mean(a) G + mean(b) directly.
  void coefficients(const DevicePlaneF& guide, const DevicePlaneF& input, int radius, float eps,
                    const DevicePlaneF* output, const Scratch* scratch, cudaStream_t stream);
  int width_ = 0, height_ = 0, stride_ = 0;
  DeviceBuffer<double> prefix_;      // per-row double prefix sums
  DeviceBuffer<float> horizontal_;   // 4 planes of horizontal window sums
  DeviceBuffer<float> coeff_;        // a, b, mean(a), mean(b)
  DeviceBuffer<float> small_;        // subsampled guide and input
};

// The raw-transmission input of step 5: min_c(I_c / A_c) with A read from device memory,
// written transposed like launch_grey_and_channel_min_transposed.
void launch_normalised_channel_min_transposed(const ImageView& d_frame,
                                              const AtmosphereState* d_state,
                                              const DevicePlaneF& out_t, cudaStream_t stream);

// Step 5 in one kernel for radii up to kPatchTileMaxRadius, as launch_grey_and_dark_channel:
// t~ = 1 - omega * min over the patch of min_c (I_c / A_c), A read from device memory.
void launch_raw_transmission(const ImageView& d_frame, const AtmosphereState* d_state, int radius,
                             float omega, const DevicePlaneF& out, cudaStream_t stream);

// Steps 7 to 9 and the conversion back to the frame's format.
void launch_recover_to_frame(const ImageView& d_in, const DevicePlaneF& transmission,
                             const AtmosphereState* d_state, const DcpParams& params,
                             const ImageView& d_out, cudaStream_t stream);

// Frame <-> float RGB planes on the device (the kernels of the colour-conversion operator).
void launch_frame_to_rgb_f32(const ImageView& d_frame, const DevicePlaneF& r,
                             const DevicePlaneF& g, const DevicePlaneF& b, cudaStream_t stream);

// The whole chain on one stream, over device frames. Stage boundaries are marked with events
// when timing is on.
class CudaDehazer {
 public:
  explicit CudaDehazer(const DcpParams& params);
  // d_in / d_out: device frames of the same format and size.
  void enqueue(const ImageView& d_in, const ImageView& d_out, AtmosphereState* d_tracker,
               const StateOrder& order, cudaStream_t stream);
  const AtmosphereState* frame_state() const { return atmosphere_.frame_state(); }
  // Stage markers: when set (stages + 1 events), the chain records them between its stages.
  void set_markers(const std::vector<cudaEvent_t>* markers) { markers_ = markers; }
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
  MinFilterCuda min_filter_;
  AtmosphereCuda atmosphere_;
  GuidedFilterCuda guided_;
  const std::vector<cudaEvent_t>* markers_ = nullptr;
};

}  // namespace hazefree::cuda
