// The float colour conversion (SPEC 3, the DCP path) of one host frame on both backends: how many
// RGB samples differ in any bit between the CPU's frame_to_rgb_f32 and the CUDA kernel.
#pragma once

#include <cstddef>
#include <cstring>
#include <vector>

#include "common/image.hpp"
#include "kernels/color_convert.hpp"
#include "kernels/cuda/cuda_memory.hpp"
#include "kernels/cuda/dehaze_cuda.hpp"
#include "kernels/cuda/device_frame.hpp"

namespace hazefree::gpu_test {

// `in`: a host frame at any depth, with the matrix and range to convert with.
inline long long float_rgb_differences(const ImageView& in) {
  const int w = in.width, h = in.height;
  const int stride = cuda::float_stride(w);
  const std::size_t plane = static_cast<std::size_t>(stride) * h;
  std::vector<float> expected(plane * 3, -1.f), actual(plane * 3, -2.f);
  cpu::frame_to_rgb_f32(
      in, RgbPlanesF{expected.data(), expected.data() + plane, expected.data() + 2 * plane, stride}, 1);
  cuda::DeviceFrame d_frame;
  d_frame.shape(in.format, w, h, in.depth);
  ImageView& dv = d_frame.view();
  dv.matrix = in.matrix;
  dv.range = in.range;
  cuda::copy_frame_async(in, dv, cudaMemcpyHostToDevice, nullptr);
  cuda::DeviceBuffer<float> d_rgb(plane * 3);
  HAZEFREE_CUDA_CHECK(cudaMemset(d_rgb.get(), 0xff, d_rgb.bytes()));
  const cuda::DevicePlaneF pr{d_rgb.get(), w, h, stride};
  const cuda::DevicePlaneF pg{d_rgb.get() + plane, w, h, stride};
  const cuda::DevicePlaneF pb{d_rgb.get() + 2 * plane, w, h, stride};
  cuda::launch_frame_to_rgb_f32(dv, pr, pg, pb, nullptr);
  HAZEFREE_CUDA_CHECK(cudaMemcpy(actual.data(), d_rgb.get(), d_rgb.bytes(), cudaMemcpyDeviceToHost));
  long long differing = 0;
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        const std::size_t i = c * plane + static_cast<std::size_t>(y) * stride + x;
        differing += std::memcmp(&expected[i], &actual[i], sizeof(float)) != 0;
      }
  return differing;
}

}  // namespace hazefree::gpu_test
