// Conversion of a frame between depths (--output-depth, SPEC 7), done before the processing so
// that an 8-bit input written at 10 bits is also processed at 10 bits.
//
// Each sample moves by the rule of common/sample_depth.hpp.
#pragma once

#include "common/image.hpp"
#include "common/sample_depth.hpp"

namespace hazefree::io {

// One sample converted from `from_depth` to `to_depth` by the rule of `range`.
using hazefree::convert_sample_depth;

// Writes `src`'s pixels into `dst` at dst.depth: same format and size; strides may differ.
// Throws std::invalid_argument on a mismatch or an invalid depth.
void convert_depth(const ImageView& src, ImageView& dst);

}  // namespace hazefree::io
