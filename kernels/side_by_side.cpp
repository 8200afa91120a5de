#include "kernels/side_by_side.hpp"

#include <cstring>
#include <stdexcept>

namespace hazefree {

int side_by_side_half_width(PixelFormat format, int width) {
  const int step = 1 << chroma_shift_x(format);
  return (width + step - 1) / step * step;
}

namespace {

// Copies the planes of `src` into `dst` starting at luma column `x0`, repeating the last
// column of each row up to `half` luma columns.
void place(const ImageView& src, ImageView& dst, int x0, int half) {
  for (int p = 0; p < src.plane_count; ++p) {
    const PlaneView& s = src.planes[p];
    const PlaneView& d = dst.planes[p];
    const int bps = bytes_per_sample(src.format, p, src.depth);
    const int shift = p == 0 ? 0 : chroma_shift_x(src.format);
    const int dst_x = x0 >> shift;
    const int dst_w = half >> shift;
    for (int y = 0; y < s.height; ++y) {
      const std::uint8_t* srow = s.data + static_cast<std::size_t>(y) * s.stride;
      std::uint8_t* drow = d.data + static_cast<std::size_t>(y) * d.stride + dst_x * bps;
      std::memcpy(drow, srow, static_cast<std::size_t>(s.width) * bps);
      for (int x = s.width; x < dst_w; ++x)
        std::memcpy(drow + x * bps, srow + (s.width - 1) * bps, bps);
    }
  }
}

}  // namespace

void compose_side_by_side(const ImageView& left, const ImageView& right, ImageView& dst) {
  const int half = side_by_side_half_width(left.format, left.width);
  if (left.format != right.format || left.width != right.width || left.height != right.height ||
      dst.format != left.format || dst.width != 2 * half || dst.height != left.height ||
      left.depth != right.depth || dst.depth != left.depth)
    throw std::invalid_argument("compose_side_by_side: mismatched frames");
  place(left, dst, 0, half);
  place(right, dst, half, half);
  dst.matrix = left.matrix;
  dst.range = left.range;
}

}  // namespace hazefree
