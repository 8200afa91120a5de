// Puts the input and the result next to each other in one frame (--side-by-side), so the
// effect can be judged before choosing parameters.
#pragma once

#include "common/image.hpp"

namespace hazefree {

// Width of each half: the frame width rounded up to the chroma subsampling, so both halves
// start on a chroma sample (an odd column is filled by repeating the last one).
int side_by_side_half_width(PixelFormat format, int width);
inline int side_by_side_width(PixelFormat format, int width) {
  return 2 * side_by_side_half_width(format, width);
}

// `dst` is side_by_side_width() x height in the format of `left`/`right` (same size).
void compose_side_by_side(const ImageView& left, const ImageView& right, ImageView& dst);

// Prints `text` (digits, '.', ' ', and the letters of "HAZE INDEX") in white on a dark box at
// the top-left corner of `dst`, at a size that follows the frame's height (--side-by-side shows
// the haze index there, SPEC 13). Other characters are drawn as blanks.
void draw_label(ImageView& dst, const char* text);

}  // namespace hazefree
