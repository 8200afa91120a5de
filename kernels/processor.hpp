// The operator interface the CPU and CUDA backends share: one frame in, one frame out, in the
// same pixel format and size. A processor owns its workspaces (allocated on the first frame of
// a given size and format, never per frame) and its temporal state (atmospheric light, HE
// history), which belongs to one stream: call reset() before a new stream.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "common/image.hpp"
#include "common/params.hpp"
#include "kernels/temporal_state.hpp"

namespace hazefree {

// Time of one stage of the last processed frame (CUDA events on the GPU, steady clock on the CPU).
struct StageTime {
  std::string name;
  double ms = 0.0;
};

// What DCP did to one frame (SPEC 13): its haze index h in [0, 1], the omega it was dehazed with
// (omega s(h) with auto strength) and its atmospheric light A_n. `valid` is false outside DCP
// and before the first frame.
struct DehazeStats {
  bool valid = false;
  float haze_index = 0.f;
  float omega = 0.f;
  std::array<float, 3> atmospheric_light{0.f, 0.f, 0.f};
};

class FrameProcessor {
 public:
  virtual ~FrameProcessor() = default;
  // `out` has the format and size of `in`; they may not alias.
  virtual void process(const ImageView& in, ImageView& out) = 0;
  // Forget temporal state (start of a new stream).
  virtual void reset() = 0;
  // "cpu (8 threads)", "cuda (NVIDIA H100 80GB HBM3)", ...
  virtual std::string description() const = 0;
  // The atmospheric light used for the last DCP frame (zeros before the first, or in HE/AHE).
  virtual std::array<float, 3> atmospheric_light() const { return {0.f, 0.f, 0.f}; }
  // DCP's figures of the frame last waited for on `lane` (process(): the last frame; any lane).
  // Cheap: no synchronisation beyond the lane's own.
  virtual DehazeStats dehaze_stats(int lane) const {
    (void)lane;
    return {};
  }
  // Per-stage times of the last frame, when the backend measures them (for `bench`).
  virtual std::vector<StageTime> stage_times() const { return {}; }
  // Processes `in` as process() does and writes the result as interleaved RGB into `rgb`
  // (kernels/rgb_output.hpp: rgb24 of in's size, at 8 bits or at in's depth), converted where
  // the backend processes; the processed frame itself is not handed out. Throws
  // std::invalid_argument for an `rgb` that does not fit, std::logic_error where the backend
  // has no such output.
  virtual void process_to_rgb(const ImageView& in, const ImageView& rgb);

  // ---- overlapped processing (the CUDA backend's stream lanes) ----
  // Lanes that can hold a frame in flight at once; 0 = process() only (the CPU backend).
  virtual int lanes() const { return 0; }
  // Starts one frame on `lane` and returns at once; `out`'s pixels are written by wait(lane).
  // Frames must be enqueued in presentation order; a lane's previous frame must have been
  // waited for. Buffers from allocate_pinned_host() make the copies asynchronous.
  virtual void enqueue(int lane, const ImageView& in, const ImageView& out) {
    (void)lane;
    ImageView result = out;
    process(in, result);
  }
  // Blocks until the lane's last enqueued frame is complete; rethrows its errors.
  virtual void wait(int lane) { (void)lane; }

  // ---- temporal state (jobs: a stream started part-way through, SPEC 8) ----
  // The state the next frame starts from (what the last processed frame left; complete lanes
  // first). Throws std::logic_error where the backend cannot give it.
  virtual TemporalState temporal_state() const;
  // The next frame starts from `state`, as if the frames before it had been processed.
  virtual void set_temporal_state(const TemporalState& state);
  // `in`'s contribution to the state (kernels/temporal_state.hpp), without processing the frame
  // or changing the state.
  virtual FrameEstimate estimate(const ImageView& in);

  // ---- frames held on the GPU (a job's chunk waiting for its start state) ----
  // Copies `frame` (a host frame, or a picture decoded on this processor's GPU) into device memory
  // of this processor's GPU and returns the owner of that memory (freed when the last copy of the
  // pointer goes), `device_view` then describing the frame there; the copy is complete on return,
  // so any stream of the GPU may read it, and enqueue() and estimate() take the view in place of
  // the frame. nullptr where the backend keeps no frames on a device, or none of its memory is
  // free now: the caller keeps the frame where it is.
  virtual std::shared_ptr<void> hold_on_device(const ImageView& frame, ImageView& device_view) {
    (void)frame;
    (void)device_view;
    return nullptr;
  }
};

// Page-locked host memory for frame buffers (cudaMallocHost), so that the CUDA backend's copies
// are asynchronous; nullptr when this build has no CUDA backend or no GPU.
void* allocate_pinned_host(std::size_t bytes);
void free_pinned_host(void* memory);
// Device memory in use on the current GPU (all of this process and others), 0 without CUDA:
// the benchmark reports what a backend added.
std::size_t gpu_memory_in_use();

// The CPU backend (OpenMP, `config.threads` threads; 1 = sequential). Throws
// std::invalid_argument for invalid parameters.
std::unique_ptr<FrameProcessor> make_cpu_processor(const ProcessingConfig& config);

// True when this build has the CUDA backend and a usable GPU is present.
bool cuda_available(std::string* why_not = nullptr);
// The current CUDA GPU's name ("NVIDIA H100 80GB HBM3"); empty without CUDA or a GPU.
std::string gpu_name();
// CUDA GPUs this process can use (CUDA_VISIBLE_DEVICES applies); 0 without CUDA.
int cuda_device_count();
// GPU `device`'s memory in bytes (cudaDeviceProp::totalGlobalMem); 0 without CUDA or that GPU.
std::size_t cuda_device_memory(int device);
// Makes GPU `device` the calling thread's current one: the CUDA processors it creates next live
// there (a job's worker threads, one GPU each). No-op for -1 or without CUDA; throws
// std::runtime_error naming the GPU when it cannot be used.
void use_gpu(int device);
// Threads that wait for a GPU sleep until it is done instead of spinning on a core (CUDA's
// blocking synchronisation, set on every GPU's primary context before it starts; the same flag
// NVDEC's context needs). For programs whose CPU is the limit: a waiting lane thread otherwise
// keeps a core busy that the encoders could use. Returns false where a context had already
// started with other flags (they are then left as they are). No-op without CUDA.
bool use_blocking_gpu_waits();

// The CUDA backend; throws std::runtime_error when unavailable.
std::unique_ptr<FrameProcessor> make_cuda_processor(const ProcessingConfig& config);

}  // namespace hazefree
