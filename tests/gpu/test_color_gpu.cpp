// Colour conversion on the GPU against the CPU's: the float path (DCP) bit-identical on every
// format, range and matrix; the fixed-point path is covered through the 8-bit modes (rgb colour).
#include <doctest/doctest.h>

#include "gpu/gpu_color_check.hpp"
#include "gpu/gpu_test_util.hpp"

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
          const long long differing = gpu_test::float_rgb_differences(in.view());
          INFO(gpu_test::describe(f, s.w, s.h), " matrix ", static_cast<int>(m), " range ",
               static_cast<int>(r), " seed ", seed);
          CHECK(differing == 0);
        }
}

}  // namespace hazefree
