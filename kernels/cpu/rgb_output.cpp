// The CPU backend's interleaved RGB output (kernels/rgb_output.hpp): rows in parallel.
#include "kernels/rgb_output.hpp"

#include <omp.h>

#include <stdexcept>
#include <string>

namespace hazefree {

void check_rgb_output(const ImageView& in, const ImageView& rgb) {
  if (rgb.format != PixelFormat::rgb24 || rgb.width != in.width || rgb.height != in.height)
    throw std::invalid_argument("rgb: a " + format_name(rgb.format, rgb.depth) + " " + std::to_string(rgb.width) +
                                "x" + std::to_string(rgb.height) + " frame, expected rgb24 " +
                                std::to_string(in.width) + "x" + std::to_string(in.height));
  if (rgb.depth != 8 && rgb.depth != in.depth)
    throw std::invalid_argument("rgb: " + std::to_string(rgb.depth) + " bits per sample, expected 8 or the frame's " +
                                std::to_string(in.depth));
}

namespace cpu {
namespace {

template <typename T, typename O>
void convert(const ImageView& in, const ImageView& rgb, int threads) {
  const rgb_output::Rule rule = rgb_output::rule_of(in, rgb.depth);
  const rgb_output::Planes planes = rgb_output::planes_of(in);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int y = 0; y < in.height; ++y) {
    std::uint8_t* row = rgb.planes[0].data + static_cast<std::ptrdiff_t>(y) * rgb.planes[0].stride;
    for (int x = 0; x < in.width; ++x) rgb_output::put<O>(row, x, rgb_output::pixel<T>(rule, planes, x, y));
  }
}

}  // namespace

void frame_to_interleaved_rgb(const ImageView& in, const ImageView& rgb, int threads) {
  check_rgb_output(in, rgb);
  const int nt = threads > 0 ? threads : omp_get_max_threads();
  if (in.depth == 8) convert<std::uint8_t, std::uint8_t>(in, rgb, nt);
  else if (rgb.depth == 8) convert<std::uint16_t, std::uint8_t>(in, rgb, nt);
  else convert<std::uint16_t, std::uint16_t>(in, rgb, nt);
}

}  // namespace cpu
}  // namespace hazefree
