#include "io/depth_convert.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace hazefree::io {

namespace {

// Reads and writes the samples of one row: one byte at 8 bits, else a native-endian 16-bit word
// holding the value `shift` bits up (P010/P016).
struct SampleRow {
  std::uint8_t* data;
  int depth;
  int shift;
  int get(int i) const {
    if (depth <= 8) return data[i];
    return reinterpret_cast<const std::uint16_t*>(data)[i] >> shift;
  }
  void set(int i, int value) const {
    if (depth <= 8) data[i] = static_cast<std::uint8_t>(value);
    else reinterpret_cast<std::uint16_t*>(data)[i] = static_cast<std::uint16_t>(value << shift);
  }
};

}  // namespace

void convert_depth(const ImageView& src, ImageView& dst) {
  if (!valid_depth(src.depth) || !valid_depth(dst.depth))
    throw std::invalid_argument("convert_depth: depth outside 8..16");
  if (src.format != dst.format || src.width != dst.width || src.height != dst.height ||
      src.plane_count != dst.plane_count)
    throw std::invalid_argument("convert_depth: source and destination differ in format or size");
  // RGB is full range whatever the tag says (the tag describes YUV only).
  const ColorRange range = src.format == PixelFormat::rgb24 ? ColorRange::full : src.range;
  // The same table for every sample: at most 65536 entries, computed once per frame.
  std::vector<std::uint16_t> table(static_cast<std::size_t>(max_code(src.depth)) + 1);
  for (int v = 0; v <= max_code(src.depth); ++v)
    table[static_cast<std::size_t>(v)] = static_cast<std::uint16_t>(convert_sample_depth(v, src.depth, dst.depth, range));
  for (int p = 0; p < src.plane_count; ++p) {
    const PlaneView& s = src.planes[p];
    const PlaneView& d = dst.planes[p];
    // Samples per row: the plane's width times its components (nv12's UV pairs, rgb's triplets).
    const int components = bytes_per_sample(src.format, p, src.depth) / sample_bytes(src.depth);
    const int samples = s.width * components;
    for (int y = 0; y < s.height; ++y) {
      const SampleRow in{s.data + static_cast<std::size_t>(y) * s.stride, src.depth, sample_shift(src)};
      const SampleRow out{d.data + static_cast<std::size_t>(y) * d.stride, dst.depth, sample_shift(dst)};
      for (int x = 0; x < samples; ++x) {
        // Bits above the depth (never set by a decoder) must not index past the table.
        const int value = std::min(in.get(x), max_code(src.depth));
        out.set(x, table[static_cast<std::size_t>(value)]);
      }
    }
  }
  dst.matrix = src.matrix;
  dst.range = src.range;
}

}  // namespace hazefree::io
