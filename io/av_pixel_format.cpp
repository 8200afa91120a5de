#include "io/av_pixel_format.hpp"

#include <algorithm>

extern "C" {
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

namespace hazefree::io::detail {

namespace {

// FFmpeg's layouts at each depth, native endianness: {depth, format} for one PixelFormat.
struct DepthLayout {
  int depth;
  AVPixelFormat format;
};

template <std::size_t N>
AVPixelFormat at_depth(const DepthLayout (&layouts)[N], int depth) {
  for (const DepthLayout& layout : layouts)
    if (layout.depth == depth) return layout.format;
  return AV_PIX_FMT_NONE;
}

const DepthLayout kYuv420[] = {{8, AV_PIX_FMT_YUV420P},    {9, AV_PIX_FMT_YUV420P9},
                               {10, AV_PIX_FMT_YUV420P10}, {12, AV_PIX_FMT_YUV420P12},
                               {14, AV_PIX_FMT_YUV420P14}, {16, AV_PIX_FMT_YUV420P16}};
const DepthLayout kYuv422[] = {{8, AV_PIX_FMT_YUV422P},    {9, AV_PIX_FMT_YUV422P9},
                               {10, AV_PIX_FMT_YUV422P10}, {12, AV_PIX_FMT_YUV422P12},
                               {14, AV_PIX_FMT_YUV422P14}, {16, AV_PIX_FMT_YUV422P16}};
const DepthLayout kYuv444[] = {{8, AV_PIX_FMT_YUV444P},    {9, AV_PIX_FMT_YUV444P9},
                               {10, AV_PIX_FMT_YUV444P10}, {12, AV_PIX_FMT_YUV444P12},
                               {14, AV_PIX_FMT_YUV444P14}, {16, AV_PIX_FMT_YUV444P16}};
// P010 and P016 (NVDEC's high-depth output) hold the value in the high bits; P016 also carries
// 12-bit pictures (NVDEC decodes 12-bit HEVC into it), which from_av_format() cannot tell.
const DepthLayout kNv12[] = {{8, AV_PIX_FMT_NV12}, {10, AV_PIX_FMT_P010}, {16, AV_PIX_FMT_P016}};
const DepthLayout kGray[] = {{8, AV_PIX_FMT_GRAY8},   {9, AV_PIX_FMT_GRAY9},   {10, AV_PIX_FMT_GRAY10},
                             {12, AV_PIX_FMT_GRAY12}, {14, AV_PIX_FMT_GRAY14}, {16, AV_PIX_FMT_GRAY16}};
const DepthLayout kRgb[] = {{8, AV_PIX_FMT_RGB24}, {16, AV_PIX_FMT_RGB48}};

template <std::size_t N>
bool find_layout(const DepthLayout (&layouts)[N], AVPixelFormat format, int* depth) {
  for (const DepthLayout& layout : layouts) {
    if (layout.format != format) continue;
    if (depth) *depth = layout.depth;
    return true;
  }
  return false;
}

}  // namespace

AVPixelFormat to_av_format(PixelFormat format, int depth) {
  switch (format) {
    case PixelFormat::yuv420p: return at_depth(kYuv420, depth);
    case PixelFormat::yuv422p: return at_depth(kYuv422, depth);
    case PixelFormat::yuv444p: return at_depth(kYuv444, depth);
    case PixelFormat::nv12: return at_depth(kNv12, depth);
    case PixelFormat::gray8: return at_depth(kGray, depth);
    case PixelFormat::rgb24: return at_depth(kRgb, depth);
  }
  return AV_PIX_FMT_NONE;
}

bool from_av_format(AVPixelFormat format, PixelFormat* out, int* depth) {
  // The full-range 8-bit variants share their layout with yuv4xxp.
  switch (format) {
    case AV_PIX_FMT_YUVJ420P: format = AV_PIX_FMT_YUV420P; break;
    case AV_PIX_FMT_YUVJ422P: format = AV_PIX_FMT_YUV422P; break;
    case AV_PIX_FMT_YUVJ444P: format = AV_PIX_FMT_YUV444P; break;
    default: break;
  }
  if (find_layout(kYuv420, format, depth)) *out = PixelFormat::yuv420p;
  else if (find_layout(kYuv422, format, depth)) *out = PixelFormat::yuv422p;
  else if (find_layout(kYuv444, format, depth)) *out = PixelFormat::yuv444p;
  else if (find_layout(kNv12, format, depth)) *out = PixelFormat::nv12;
  else if (find_layout(kGray, format, depth)) *out = PixelFormat::gray8;
  else if (find_layout(kRgb, format, depth)) *out = PixelFormat::rgb24;
  else return false;
  return true;
}

int av_format_depth(AVPixelFormat format) {
  const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(format);
  return desc && desc->nb_components > 0 ? desc->comp[0].depth : 8;
}

bool is_full_range_yuv_format(AVPixelFormat format) {
  return format == AV_PIX_FMT_YUVJ420P || format == AV_PIX_FMT_YUVJ422P ||
         format == AV_PIX_FMT_YUVJ444P || format == AV_PIX_FMT_YUVJ440P ||
         format == AV_PIX_FMT_YUVJ411P;
}

// Nearest layout, by what the pixels are: RGB-like (packed, planar, palette, Bayer, XYZ) ->
// rgb24; one component (with or without alpha, any depth) -> gray; YUV keeps its chroma
// subsampling (4:2:0 semi-planar, e.g. nv21 -> nv12; 4:1:1/4:1:0 round to the nearest coarser
// layout we have; alpha dropped). The depth is kept: 8-bit formats (and fewer bits, e.g. rgb565
// or monob) give 8 bits; more give the source's own depth where the layout exists at it, else
// the next one up (RGB above 8 bits: rgb48 at 16; 4:2:0 semi-planar at other depths than P010
// and P016: planar yuv420p at the depth), so no precision is lost in the conversion.
PixelFormat nearest_supported(AVPixelFormat format, int* depth) {
  const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(format);
  PixelFormat layout = PixelFormat::rgb24;
  if (desc && !(desc->flags & (AV_PIX_FMT_FLAG_RGB | AV_PIX_FMT_FLAG_PAL | AV_PIX_FMT_FLAG_BAYER))) {
    const int colour_components = desc->nb_components - ((desc->flags & AV_PIX_FMT_FLAG_ALPHA) ? 1 : 0);
    const bool xyz = desc->name && std::string(desc->name).rfind("xyz", 0) == 0;
    if (colour_components == 1) {
      layout = PixelFormat::gray8;
    } else if (colour_components == 3 && !xyz) {
      const int shift_x = desc->log2_chroma_w, shift_y = desc->log2_chroma_h;
      const bool semi_planar = av_pix_fmt_count_planes(format) == 2;
      if (shift_x >= 1 && shift_y >= 1) layout = semi_planar ? PixelFormat::nv12 : PixelFormat::yuv420p;
      else if (shift_x >= 1) layout = PixelFormat::yuv422p;
      else layout = PixelFormat::yuv444p;
    }
  }
  const int source_depth = (desc && !(desc->flags & AV_PIX_FMT_FLAG_PAL)) ? av_format_depth(format) : 8;
  int chosen = 8;
  if (source_depth > 8) {
    if (layout == PixelFormat::nv12 && to_av_format(layout, source_depth) == AV_PIX_FMT_NONE)
      layout = PixelFormat::yuv420p;
    for (chosen = std::min(source_depth, kMaxDepth); chosen < kMaxDepth; ++chosen)
      if (to_av_format(layout, chosen) != AV_PIX_FMT_NONE) break;
  }
  if (depth) *depth = chosen;
  return layout;
}

bool is_yuv_layout(AVPixelFormat format) {
  const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(format);
  if (!desc || (desc->flags & (AV_PIX_FMT_FLAG_RGB | AV_PIX_FMT_FLAG_PAL | AV_PIX_FMT_FLAG_BAYER))) {
    return false;
  }
  return desc->nb_components - ((desc->flags & AV_PIX_FMT_FLAG_ALPHA) ? 1 : 0) == 3;
}

int sws_matrix_id(ColorMatrix matrix) {
  switch (matrix) {
    case ColorMatrix::bt709: return SWS_CS_ITU709;
    case ColorMatrix::bt2020: return SWS_CS_BT2020;
    case ColorMatrix::bt601: break;
  }
  return SWS_CS_ITU601;
}

}  // namespace hazefree::io::detail
