// Colour conversion on the GPU against the CPU's: the float path (DCP) bit-identical on every
// format, range and matrix; the fixed-point path is covered through the 8-bit modes (rgb colour).
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "gpu/gpu_test_util.hpp"
#include "kernels/color_convert.hpp"
#include "kernels/cuda/cuda_memory.hpp"
#include "kernels/cuda/dehaze_cuda.hpp"
#include "kernels/cuda/device_frame.hpp"

namespace hazefree {

TEST_CASE("frame to float RGB: identical to the CPU on every format, matrix and range") {
  const gpu_test::Size sizes[] = {{1, 1}, {2, 2}, {3, 2}, {17, 9}, {321, 241}, {1920, 1080}};
  for (const PixelFormat f : gpu_test::all_formats())
    for (const gpu_test::Size s : sizes)
      for (const ColorMatrix m : {ColorMatrix::bt601, ColorMatrix::bt709, ColorMatrix::bt2020})
        for (const ColorRange r : {ColorRange::limited, ColorRange::full}) {
          if (gpu_test::skip_large(s.w, s.h)) continue;
          if (!is_yuv(f) && (m != ColorMatrix::bt601 || r != ColorRange::limited)) continue;
          const std::uint32_t seed = gpu_test::fresh_seed();
          Image in = gpu_test::make_image(f, s.w, s.h);
          gpu_test::fill_random(in.view(), seed);
          in.view().matrix = m;
          in.view().range = is_yuv(f) ? r : ColorRange::full;
          const int stride = cuda::float_stride(s.w);
          const std::size_t plane = static_cast<std::size_t>(stride) * s.h;
          std::vector<float> expected(plane * 3, -1.f), actual(plane * 3, -2.f);
          cpu::frame_to_rgb_f32(in.view(), RgbPlanesF{expected.data(), expected.data() + plane,
                                                      expected.data() + 2 * plane, stride}, 1);
          cuda::DeviceFrame d_frame;
          d_frame.shape(f, s.w, s.h);
          ImageView& dv = d_frame.view();
          dv.matrix = in.view().matrix;
          dv.range = in.view().range;
          cuda::copy_frame_async(in.view(), dv, cudaMemcpyHostToDevice, nullptr);
          cuda::DeviceBuffer<float> d_rgb(plane * 3);
          HAZEFREE_CUDA_CHECK(cudaMemset(d_rgb.get(), 0xff, d_rgb.bytes()));
          const cuda::DevicePlaneF pr{d_rgb.get(), s.w, s.h, stride};
          const cuda::DevicePlaneF pg{d_rgb.get() + plane, s.w, s.h, stride};
          const cuda::DevicePlaneF pb{d_rgb.get() + 2 * plane, s.w, s.h, stride};
          cuda::launch_frame_to_rgb_f32(dv, pr, pg, pb, nullptr);
          HAZEFREE_CUDA_CHECK(cudaMemcpy(actual.data(), d_rgb.get(), d_rgb.bytes(), cudaMemcpyDeviceToHost));
          long long differing = 0;
          for (int c = 0; c < 3; ++c)
            for (int y = 0; y < s.h; ++y)
              for (int x = 0; x < s.w; ++x) {
                const std::size_t i = c * plane + static_cast<std::size_t>(y) * stride + x;
                differing += std::memcmp(&expected[i], &actual[i], sizeof(float)) != 0;
              }
          INFO(gpu_test::describe(f, s.w, s.h), " matrix ", static_cast<int>(m), " range ",
               static_cast<int>(r), " seed ", seed);
          CHECK(differing == 0);
        }
}

}  // namespace hazefree
