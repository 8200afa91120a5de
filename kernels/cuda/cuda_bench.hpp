// Kernel benchmark of the CUDA backend: each mode's device-resident per-frame chain timed with
// CUDA events (warm-up excluded, median of N), for `hazefree bench` and scripts/gpu-check.sh.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/image.hpp"
#include "common/params.hpp"
#include "kernels/processor.hpp"

namespace hazefree::cuda {

struct CudaBenchResult {
  std::string gpu;             // device name
  int width = 0, height = 0;
  PixelFormat format = PixelFormat::yuv420p;
  int iterations = 0;
  double chain_ms = 0.0;       // median device-resident chain per frame (graph replay)
  double chain_min_ms = 0.0;   // fastest frame
  double stream_ms = 0.0;      // median with plain launches (no graph)
  double upload_ms = 0.0;      // median host-to-device copy of one frame from pinned memory
  double download_ms = 0.0;    // median device-to-host copy
  std::vector<StageTime> stages;  // median per stage of the plain-launch runs
  std::size_t device_bytes = 0;   // device memory the one-lane processor took (buffers, workspaces)
  std::size_t frame_bytes = 0;    // one frame in its native format (read once, written once: 2x)
};

// Device-to-device copy bandwidth in GB/s (bytes read plus bytes written over the time), the
// memory ceiling the chains are measured against.
double measure_device_bandwidth_gbps();

// Times `config`'s chain on generated frames (smooth gradients with noise) of the given size.
// Throws std::runtime_error without a usable GPU.
// `haze_index` false: DCP without the haze index (its cost, SPEC 13).
CudaBenchResult bench_cuda_chain(const ProcessingConfig& config, PixelFormat format, int width,
                                 int height, int iterations = 100, int warmup = 10, bool haze_index = true);

}  // namespace hazefree::cuda
