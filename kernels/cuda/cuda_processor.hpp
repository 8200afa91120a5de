// The CUDA backend's frame processor (SPEC 3, 4, 5.1), behind kernels/processor.hpp's interface,
// plus what a two-stream pipeline needs: per-lane asynchronous enqueue from pinned host frames
// and a wait. Each lane owns a stream, device frames and the chain's workspaces (allocated when
// the frame size or format changes, never per frame); the stream's temporal state (A for DCP,
// the he_temporal history) is shared, and its update step is ordered between consecutive frames
// by an event, whatever lane they run on. Frames must be enqueued in presentation order.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "common/image.hpp"
#include "kernels/device_processor.hpp"
#include "common/params.hpp"
#include "kernels/processor.hpp"

namespace hazefree::cuda {

class CudaProcessor final : public FrameProcessor, public DeviceFrameProcessor {
 public:
  // `lanes`: streams (1 or more; 2 overlaps the copies of one frame with the compute of another).
  // Throws std::invalid_argument for invalid parameters, std::runtime_error without a usable GPU.
  explicit CudaProcessor(const ProcessingConfig& config, int lanes = 2);
  ~CudaProcessor() override;
  CudaProcessor(const CudaProcessor&) = delete;
  CudaProcessor& operator=(const CudaProcessor&) = delete;

  // FrameProcessor: host frames (pageable or pinned) through lane 0, synchronously.
  void process(const ImageView& in, ImageView& out) override;
  // The same, converted to RGB on the device (kernels/cuda/rgb_output_cuda.hpp): only the RGB
  // frame comes back.
  void process_to_rgb(const ImageView& in, const ImageView& rgb) override;
  void reset() override;
  std::string description() const override;
  std::array<float, 3> atmospheric_light() const override;
  DehazeStats dehaze_stats(int lane) const override;
  std::vector<StageTime> stage_times() const override;
  // Temporal state (jobs): read from and written to the device between frames (all lanes
  // complete first). estimate() covers DCP (the chain runs into a scratch frame and the state is
  // put back); HE's histograms are integers, identical on both backends, and come from the CPU.
  TemporalState temporal_state() const override;
  void set_temporal_state(const TemporalState& state) override;
  FrameEstimate estimate(const ImageView& in) override;
  // Held frames: stream-ordered allocations from the GPU's memory pool, uploaded through a
  // page-locked staging buffer on a stream of their own (NVDEC pictures copied on the device).
  std::shared_ptr<void> hold_on_device(const ImageView& frame, ImageView& device_view) override;

  // ---- pipeline interface (FrameProcessor's overlapped processing) ----
  int lanes() const override;
  cudaStream_t stream(int lane) const;
  // Enqueues upload, processing and download of one frame on `lane` and returns at once.
  // h_in / h_out must stay untouched until wait(lane); pinned memory (cudaMallocHost) makes the
  // copies asynchronous. The lane's previous frame must have been waited for.
  void enqueue(int lane, const ImageView& h_in, const ImageView& h_out) override;
  // Blocks until the lane's last enqueued frame is in its h_out; rethrows device errors.
  void wait(int lane) override;

  // ---- device-resident interface (benchmarks, NVDEC frames) ----
  // Device frames for `lane` shaped like `format` x width x height at `depth` (owned by the
  // lane).
  ImageView device_input(int lane, PixelFormat format, int width, int height, ColorMatrix matrix,
                         ColorRange range, int depth = 8);
  ImageView device_output(int lane);
  // Runs the chain on the lane's device frames only (no copies), asynchronously.
  void enqueue_device(int lane);
  // Captures enqueue_device(lane) into a CUDA graph (launch gaps vanish) and replays it; the
  // graph is rebuilt when the frame geometry changes. Stage markers are not recorded in graphs.
  void launch_device_graph(int lane);
  // DeviceFrameProcessor: the caller's device frames on the caller's stream, with lane 0's
  // workspaces (the lane's last frame, on whatever stream, is waited for on the device).
  void process_device(const ImageView& d_in, const ImageView& d_out, void* stream) override;

  // Stage timing with CUDA events (on by default); off saves a few event records per frame.
  void set_stage_timing(bool on) { stage_timing_ = on; }
  // DCP without the haze index (SPEC 13): for the benchmark's cost comparison only.
  void set_haze_index(bool on);
  // The raw A^ of the last DCP frame.
  std::array<float, 3> atmospheric_estimate() const;

 private:
  struct Lane;
  struct State;
  struct Holding;
  int device_ = 0;
  Lane& lane_at(int lane) const;
  // Which of DCP's steps a frame goes through: all of them, or up to its A^ and haze estimate
  // (estimate(); CudaDehazer::enqueue_light).
  enum class ChainPart { whole, light };
  // Upload, chain and (unless `h_out` is null) download of one frame on `lane` (enqueue()).
  void enqueue_chain(int lane, const ImageView& h_in, const ImageView* h_out, ChainPart part = ChainPart::whole);
  // Makes this processor's GPU the calling thread's current one (set at construction).
  void select_device() const;
  void shape(Lane& lane, PixelFormat format, int width, int height, int depth);
  void track_geometry(PixelFormat format, int width, int height, int depth);
  void run_chain(Lane& lane, const ImageView& d_in, const ImageView& d_out, cudaStream_t stream,
                 bool markers, ChainPart part = ChainPart::whole);
  std::vector<std::string> stage_names() const;

  ProcessingConfig config_;
  std::vector<std::unique_ptr<Lane>> lanes_;
  std::unique_ptr<State> state_;
  // hold_on_device()'s stream and staging, shared with the frames it handed out (which free
  // their memory on that stream, possibly after this processor has gone).
  std::shared_ptr<Holding> holding_;
  std::string device_name_;
  bool stage_timing_ = true;
  int last_lane_ = -1;
  PixelFormat format_ = PixelFormat::yuv420p;
  int width_ = 0, height_ = 0, depth_ = 8;
  // Bins of each he_temporal channel history handed over by set_temporal_state() and not yet
  // met by a frame (0: none): the first frame checks them against its depth, as the CPU does.
  std::array<std::size_t, 3> handed_bins_{};
};

}  // namespace hazefree::cuda
