#include "kernels/cuda/rgb_output_cuda.hpp"

#include <cstdint>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/rgb_output.hpp"

namespace hazefree::cuda {
namespace {

template <typename T, typename O>
__global__ void frame_to_interleaved_rgb_kernel(rgb_output::Rule rule, rgb_output::Planes in, std::uint8_t* rgb,
                                                int rgb_stride, int width, int height) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  rgb_output::put<O>(rgb + static_cast<std::ptrdiff_t>(y) * rgb_stride, x, rgb_output::pixel<T>(rule, in, x, y));
}

template <typename T, typename O>
void launch_as(const ImageView& d_in, const ImageView& d_rgb, cudaStream_t stream) {
  const dim3 block(32, 8);
  const dim3 grid(div_up(d_in.width, 32), div_up(d_in.height, 8));
  frame_to_interleaved_rgb_kernel<T, O><<<grid, block, 0, stream>>>(
      rgb_output::rule_of(d_in, d_rgb.depth), rgb_output::planes_of(d_in), d_rgb.planes[0].data,
      d_rgb.planes[0].stride, d_in.width, d_in.height);
  HAZEFREE_CUDA_CHECK_LAUNCH("frame_to_interleaved_rgb_kernel");
}

}  // namespace

void launch_frame_to_interleaved_rgb(const ImageView& d_in, const ImageView& d_rgb, cudaStream_t stream) {
  check_rgb_output(d_in, d_rgb);
  if (d_in.depth == 8) launch_as<std::uint8_t, std::uint8_t>(d_in, d_rgb, stream);
  else if (d_rgb.depth == 8) launch_as<std::uint16_t, std::uint8_t>(d_in, d_rgb, stream);
  else launch_as<std::uint16_t, std::uint16_t>(d_in, d_rgb, stream);
}

}  // namespace hazefree::cuda
