// The guided filter on the GPU (kernels/cuda/guided_filter_cuda.cu).
#pragma once

#include <cuda_runtime.h>

#include "common/image.hpp"
#include "kernels/cuda/cuda_memory.hpp"
#include "kernels/cuda/dcp_planes.hpp"

namespace hazefree::cuda {

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

}  // namespace hazefree::cuda
