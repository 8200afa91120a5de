// Conversion of a frame between depths (--output-depth, SPEC 7), done before the processing so
// that an 8-bit input written at 10 bits is also processed at 10 bits.
//
// Limited-range samples (YUV video, tagged grey) move by a shift, which keeps the legal range
// exactly (16 << s .. 235 << s): up v << s, down (v + 2^(s-1)) >> s, at most M_out. Full-range
// samples (RGB, grey, yuvj) are scaled so that black and white stay at 0 and M:
// (v * M_out + M_in / 2) / M_in in integers.
#pragma once

#include "common/image.hpp"

namespace hazefree::io {

// One sample converted from `from_depth` to `to_depth` by the rule of `range` (above).
int convert_sample_depth(int value, int from_depth, int to_depth, ColorRange range);

// Writes `src`'s pixels into `dst` at dst.depth: same format and size; strides may differ.
// Throws std::invalid_argument on a mismatch or an invalid depth.
void convert_depth(const ImageView& src, ImageView& dst);

}  // namespace hazefree::io
