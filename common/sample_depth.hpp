// The rule that moves one sample between depths (--output-depth, SPEC 7; the 8-bit RGB of a
// deeper frame): limited-range samples (YUV video, tagged grey) move by a shift, which keeps the
// legal range exactly (16 << s .. 235 << s): up v << s, down (v + 2^(s-1)) >> s, at most M_out.
// Full-range samples (RGB, grey, yuvj) are scaled so that black and white stay at 0 and M:
// (v * M_out + M_in / 2) / M_in in integers. constexpr, so that device code may use it too.
#pragma once

#include <cstdint>

#include "common/image.hpp"

namespace hazefree {

constexpr int convert_sample_depth(int value, int from_depth, int to_depth, ColorRange range) {
  if (from_depth == to_depth) return value;
  if (range == ColorRange::limited) {
    if (to_depth > from_depth) return value << (to_depth - from_depth);
    const int shift = from_depth - to_depth;
    const int down = (value + (1 << (shift - 1))) >> shift;
    return down < max_code(to_depth) ? down : max_code(to_depth);
  }
  const std::int64_t from_max = max_code(from_depth), to_max = max_code(to_depth);
  return static_cast<int>((value * to_max + from_max / 2) / from_max);
}

}  // namespace hazefree
