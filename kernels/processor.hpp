// The operator interface the CPU and CUDA backends share: one frame in, one frame out, in the
// same pixel format and size. A processor owns its workspaces (allocated on the first frame of
// a given size and format, never per frame) and its temporal state (atmospheric light, HE
// history), which belongs to one stream: call reset() before a new stream.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "kernels/image.hpp"
#include "kernels/params.hpp"

namespace hazefree {

// Time of one stage of the last processed frame (CUDA events on the GPU, steady clock on the CPU).
struct StageTime {
  std::string name;
  double ms = 0.0;
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
  // Per-stage times of the last frame, when the backend measures them (for `bench`).
  virtual std::vector<StageTime> stage_times() const { return {}; }
};

// The CPU backend (OpenMP, `config.threads` threads; 1 = sequential). Throws
// std::invalid_argument for invalid parameters.
std::unique_ptr<FrameProcessor> make_cpu_processor(const ProcessingConfig& config);

// True when this build has the CUDA backend and a usable GPU is present.
bool cuda_available(std::string* why_not = nullptr);

// The CUDA backend; throws std::runtime_error when unavailable.
std::unique_ptr<FrameProcessor> make_cuda_processor(const ProcessingConfig& config);

}  // namespace hazefree
