#include "kernels/side_by_side.hpp"

#include <algorithm>
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

// 5x7 glyphs, one byte per row, bit 4 the leftmost column.
struct Glyph {
  char c;
  std::uint8_t rows[7];
};
constexpr Glyph kGlyphs[] = {
    {'0', {0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E}}, {'1', {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'2', {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F}}, {'3', {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E}},
    {'4', {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02}}, {'5', {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E}},
    {'6', {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E}}, {'7', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08}},
    {'8', {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E}}, {'9', {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C}},
    {'.', {0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C}}, {'H', {0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11}},
    {'A', {0x0E, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11}}, {'Z', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F}},
    {'E', {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F}}, {'I', {0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'N', {0x11, 0x19, 0x15, 0x13, 0x11, 0x11, 0x11}}, {'D', {0x1E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x1E}},
    {'X', {0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11}},
};

const Glyph* glyph_of(char c) {
  for (const Glyph& g : kGlyphs)
    if (g.c == c) return &g;
  return nullptr;
}

// Writes `value` (at 8 bits; scaled to the depth) into sample (x, y) of plane `p`, every
// interleaved component of it.
void put(ImageView& v, int p, int x, int y, int value) {
  const PlaneView& plane = v.planes[p];
  if (x < 0 || y < 0 || x >= plane.width || y >= plane.height) return;
  const int bps = bytes_per_sample(v.format, p, v.depth);
  const bool wide = v.depth > 8;
  const int components = bps / (wide ? 2 : 1);
  const unsigned code = static_cast<unsigned>(value) << (v.depth - 8) << sample_shift(v);
  std::uint8_t* at = plane.data + static_cast<std::size_t>(y) * plane.stride + static_cast<std::size_t>(x) * bps;
  for (int c = 0; c < components; ++c) {
    if (wide) {
      const auto code16 = static_cast<std::uint16_t>(code);
      std::memcpy(at + 2 * c, &code16, 2);
    } else {
      at[c] = static_cast<std::uint8_t>(code);
    }
  }
}

}  // namespace

void draw_label(ImageView& dst, const char* text) {
  const int scale = std::max(1, dst.height / 240);
  const int n = static_cast<int>(std::strlen(text));
  const int margin = 2 * scale, box_w = n * 6 * scale + 2 * margin, box_h = 7 * scale + 2 * margin;
  const bool yuv = is_yuv(dst.format);
  const int white = yuv && dst.range == ColorRange::limited ? 235 : 255;
  const int black = yuv && dst.range == ColorRange::limited ? 16 : 0;
  for (int y = 0; y < box_h; ++y)
    for (int x = 0; x < box_w; ++x) {
      bool ink = false;
      const int gx = x - margin, gy = y - margin;
      if (gx >= 0 && gy >= 0 && gy < 7 * scale) {
        const int index = gx / (6 * scale), col = (gx % (6 * scale)) / scale;
        const Glyph* g = index < n ? glyph_of(text[index]) : nullptr;
        ink = g && col < 5 && (g->rows[gy / scale] >> (4 - col) & 1);
      }
      put(dst, 0, x, y, ink ? white : black);
    }
  if (!yuv) return;
  // The box's chroma neutral, so the text is white whatever the picture's colour.
  const int sx = chroma_shift_x(dst.format), sy = chroma_shift_y(dst.format);
  for (int p = 1; p < dst.plane_count; ++p)
    for (int y = 0; y < (box_h + (1 << sy) - 1) >> sy; ++y)
      for (int x = 0; x < (box_w + (1 << sx) - 1) >> sx; ++x) put(dst, p, x, y, 128);
}

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
