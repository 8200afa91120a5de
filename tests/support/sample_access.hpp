// Reading and writing single samples of a frame at any depth, for tests: one-byte samples at 8
// bits, two-byte native-endian ones above, with nv12's P010/P016 shift undone on reading and
// applied on writing (common/image.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>

#include "common/image.hpp"

namespace hazefree::samples {

// Samples per row of plane p (an rgb pixel is three, an nv12 UV pair two).
inline int row_samples(const ImageView& v, int p) {
  return v.planes[p].width * bytes_per_sample(v.format, p, v.depth) / sample_bytes(v.depth);
}

// The value of sample i of row y of plane p.
inline int sample(const ImageView& v, int p, int i, int y) {
  const std::uint8_t* row = v.planes[p].data + static_cast<std::ptrdiff_t>(y) * v.planes[p].stride;
  if (v.depth == 8) return row[i];
  std::uint16_t raw;
  std::memcpy(&raw, row + 2 * i, 2);
  return raw >> sample_shift(v);
}

inline void set_sample(const ImageView& v, int p, int i, int y, int value) {
  std::uint8_t* row = v.planes[p].data + static_cast<std::ptrdiff_t>(y) * v.planes[p].stride;
  if (v.depth == 8) {
    row[i] = static_cast<std::uint8_t>(value);
    return;
  }
  const auto raw = static_cast<std::uint16_t>(value << sample_shift(v));
  std::memcpy(row + 2 * i, &raw, 2);
}

// Every sample of `v` a random code of its depth.
inline void fill_random_codes(const ImageView& v, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> code(0, max_code(v.depth));
  for (int p = 0; p < v.plane_count; ++p)
    for (int y = 0; y < v.planes[p].height; ++y)
      for (int i = 0; i < row_samples(v, p); ++i) set_sample(v, p, i, y, code(rng));
}

}  // namespace hazefree::samples
