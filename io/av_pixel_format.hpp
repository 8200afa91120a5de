// Private to io/: the mapping between FFmpeg's pixel formats and the project's PixelFormats at
// each depth, and libswscale's matrix ids.
#pragma once

extern "C" {
#include <libavutil/pixfmt.h>
}

#include "common/image.hpp"

namespace hazefree::io::detail {

// The AVPixelFormat laid out as `format` at `depth` bits (yuv420p for both ranges; the range
// travels apart): yuv420p10le for yuv420p at 10, p010le for nv12 at 10, gray16le for gray8 at 16,
// rgb48le for rgb24 at 16 (native endianness). AV_PIX_FMT_NONE where FFmpeg has no such layout
// (rgb24 below 16 bits above 8, odd depths FFmpeg does not name, nv12 other than at 8, 10, 16).
AVPixelFormat to_av_format(PixelFormat format, int depth = 8);
// The PixelFormat and depth whose layout is exactly `format` (yuvj* included, native endianness
// only), or false. `depth` may be null.
bool from_av_format(AVPixelFormat format, PixelFormat* out, int* depth = nullptr);
// libswscale's coefficient table (SWS_CS_*) for a YCbCr matrix.
int sws_matrix_id(ColorMatrix matrix);
// The supported layout nearest to an unsupported `format`, and in `depth` the depth it is
// delivered at: 8 for 8-bit formats, else the source's own bits where that layout has them
// (rounded up to one it has: RGB above 8 bits becomes rgb48 at 16). See av_pixel_format.cpp.
PixelFormat nearest_supported(AVPixelFormat format, int* depth = nullptr);
// Bits per sample of an FFmpeg format (its first component); 8 when unknown.
int av_format_depth(AVPixelFormat format);
bool is_full_range_yuv_format(AVPixelFormat format);  // yuvj420p, yuvj422p, yuvj444p
// Whether `format` holds Y, Cb and Cr (an alpha plane aside), not RGB, palette, Bayer or grey
// samples: a picture without a range tag is limited range only then.
bool is_yuv_layout(AVPixelFormat format);

}  // namespace hazefree::io::detail
