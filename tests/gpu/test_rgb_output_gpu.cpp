// The interleaved RGB output (kernels/rgb_output.hpp) on the GPU against the CPU backend, bit for
// bit: every layout at 8 bits and at 10, 12 and 16 bits (P010/P016 nv12 included), both ranges,
// to 8-bit RGB and to RGB at depth, odd sizes and 1080p; and the CUDA processor's
// process_to_rgb (the frame processed and converted on the device) against the CPU processor's.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "gpu/gpu_test_util.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device_frame.hpp"
#include "kernels/cuda/rgb_output_cuda.hpp"
#include "kernels/processor.hpp"
#include "kernels/rgb_output.hpp"
#include "support/sample_access.hpp"

namespace hazefree {
namespace {

constexpr PixelFormat kFormats[] = {PixelFormat::yuv420p, PixelFormat::yuv422p, PixelFormat::yuv444p,
                                    PixelFormat::nv12,    PixelFormat::gray8,   PixelFormat::rgb24};

Image random_frame(PixelFormat f, int w, int h, int depth, ColorRange range, std::uint32_t seed) {
  Image img(f, w, h, 64, depth);
  img.view().matrix = default_matrix_for_height(h);
  img.view().range = range;
  samples::fill_random_codes(img.view(), seed);
  return img;
}

// Bytes of the two rgb24 frames' rows that differ.
long long differing_bytes(const ImageView& a, const ImageView& b) {
  long long n = 0;
  const std::size_t row = static_cast<std::size_t>(a.width) * 3 * sample_bytes(a.depth);
  for (int y = 0; y < a.height; ++y) {
    const std::uint8_t* ra = a.planes[0].data + static_cast<std::ptrdiff_t>(y) * a.planes[0].stride;
    const std::uint8_t* rb = b.planes[0].data + static_cast<std::ptrdiff_t>(y) * b.planes[0].stride;
    for (std::size_t i = 0; i < row; ++i) n += ra[i] != rb[i];
  }
  return n;
}

}  // namespace

TEST_CASE("RGB output on the GPU: identical to the CPU on every layout, depth and range") {
  std::string why;
  REQUIRE_MESSAGE(cuda_available(&why), why);
  const gpu_test::Size sizes[] = {{1, 1}, {3, 2}, {17, 9}, {321, 241}, {1920, 1080}};
  for (const int depth : {8, 10, 12, 16})
    for (const PixelFormat f : kFormats)
      for (const ColorRange range : {ColorRange::limited, ColorRange::full})
        for (const gpu_test::Size s : sizes)
          for (const int out_depth : {8, depth}) {
            if (gpu_test::skip_large(s.w, s.h)) continue;
            const std::uint32_t seed = gpu_test::fresh_seed();
            const Image in = random_frame(f, s.w, s.h, depth, range, seed);
            Image cpu_rgb(PixelFormat::rgb24, s.w, s.h, 64, out_depth), gpu_rgb(PixelFormat::rgb24, s.w, s.h, 64, out_depth);
            std::memset(gpu_rgb.view().planes[0].data, 0xA5,
                        static_cast<std::size_t>(gpu_rgb.view().planes[0].stride) * s.h);
            cpu::frame_to_interleaved_rgb(in.view(), cpu_rgb.view(), 0);
            cuda::DeviceFrame d_in, d_rgb;
            d_in.shape(f, s.w, s.h, depth);
            d_in.view().matrix = in.view().matrix;
            d_in.view().range = range;
            d_rgb.shape(PixelFormat::rgb24, s.w, s.h, out_depth);
            cuda::copy_frame_async(in.view(), d_in.view(), cudaMemcpyHostToDevice, nullptr);
            cuda::launch_frame_to_interleaved_rgb(d_in.view(), d_rgb.view(), nullptr);
            cuda::copy_frame_async(d_rgb.view(), gpu_rgb.view(), cudaMemcpyDeviceToHost, nullptr);
            HAZEFREE_CUDA_CHECK(cudaDeviceSynchronize());
            INFO(format_name(f, depth), " ", s.w, "x", s.h, range == ColorRange::limited ? " limited" : " full",
                 " to ", out_depth, " bits, seed ", seed);
            CHECK(differing_bytes(cpu_rgb.view(), gpu_rgb.view()) == 0);
          }
}

TEST_CASE("RGB output on the GPU: the CUDA processor's process_to_rgb gives the CPU processor's") {
  std::string why;
  REQUIRE_MESSAGE(cuda_available(&why), why);
  for (const ProcessingConfig& config :
       {gpu_test::he_config(ColorMode::luma), gpu_test::ahe_config(ColorMode::luma, 63, 2.f)})
    for (const PixelFormat f : {PixelFormat::yuv420p, PixelFormat::nv12, PixelFormat::gray8})
      for (const int depth : {8, 10})
        for (const int out_depth : {8, depth}) {
          const std::uint32_t seed = gpu_test::fresh_seed();
          const Image in = random_frame(f, 321, 241, depth, ColorRange::limited, seed);
          Image cpu_rgb(PixelFormat::rgb24, 321, 241, 64, out_depth), gpu_rgb(PixelFormat::rgb24, 321, 241, 64, out_depth);
          make_cpu_processor(config)->process_to_rgb(in.view(), cpu_rgb.view());
          make_cuda_processor(config)->process_to_rgb(in.view(), gpu_rgb.view());
          INFO(to_string(config.mode), " ", format_name(f, depth), " to ", out_depth, " bits, seed ", seed);
          CHECK(differing_bytes(cpu_rgb.view(), gpu_rgb.view()) == 0);
        }
}

}  // namespace hazefree
