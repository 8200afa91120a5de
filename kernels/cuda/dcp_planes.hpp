// What the DCP operators on the GPU pass between them: float planes in device memory, the
// atmospheric light's state in device memory, and the order of the stateful step across lanes.
#pragma once

#include <cuda_runtime.h>

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

// The atmospheric light in device memory (nothing returns to the host per frame; the later
// kernels read A there).
struct AtmosphereState {
  float value[3];     // A_n, used by steps 5 to 8
  float estimate[3];  // A^_n
  int has_value;      // 0 before the first frame (or after reset)
  int last_cut;
  float haze_estimate;  // h^_n (SPEC 13)
  float haze;           // h_n
  float strength;       // s(h_n) with auto strength, else 1: scales omega and the brightness boost
};

// Orders the one step that carries state from frame to frame (A, or the HE history) between
// lanes: the step waits for `wait` (the previous frame's step) and records `done` after itself.
// Both null when frames run on one stream.
struct StateOrder {
  cudaEvent_t wait = nullptr;
  cudaEvent_t done = nullptr;
};

}  // namespace hazefree::cuda
