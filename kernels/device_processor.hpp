// Frames that stay in device memory: a backend that can process them on a caller's CUDA stream
// (the CUDA backend) implements this beside FrameProcessor; callers that hold device frames (the
// library's Processor::process_device) ask a FrameProcessor for it with dynamic_cast. The stream
// travels as void* so that this header needs no CUDA header.
#pragma once

#include "common/image.hpp"

namespace hazefree {

class DeviceFrameProcessor {
 public:
  virtual ~DeviceFrameProcessor() = default;
  // Queues the processing of `d_in` into `d_out` (device memory of the current device, same
  // format and size, not overlapping) on `stream` (a cudaStream_t; nullptr = the legacy default
  // stream) and returns. `d_in` must be ready on that stream; `d_out` is ready when the stream
  // reaches this point. The temporal state carries on from the previous frame, whichever stream
  // or lane it ran on. Throws std::invalid_argument for mismatched frames.
  virtual void process_device(const ImageView& d_in, const ImageView& d_out, void* stream) = 0;
};

}  // namespace hazefree
