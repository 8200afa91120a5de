// A still picture as JPEG (FFmpeg's mjpeg encoder), for previews: a frame of any layout and
// depth, scaled down to a width when asked.
#pragma once

#include <cstdint>
#include <vector>

#include "common/image.hpp"

namespace hazefree::io {

// Encodes `frame` (host memory) as one JPEG picture of at most `max_width` pixels across (0: the
// frame's own width; the height follows the aspect, even numbers), quality `quality` from 2
// (best) to 31 (FFmpeg's qscale). Throws IoError on failure.
std::vector<std::uint8_t> encode_jpeg(const ImageView& frame, int max_width = 0, int quality = 5);

}  // namespace hazefree::io
