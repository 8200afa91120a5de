#include "io/av_error.hpp"

#include <cstdio>

extern "C" {
#include <libavutil/error.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

namespace hazefree::io {

void PacketDeleter::operator()(AVPacket* packet) const { av_packet_free(&packet); }

namespace detail {

std::string Dictionary::keys() const {
  std::string list;
  const AVDictionaryEntry* entry = nullptr;
  while ((entry = av_dict_get(dict_, "", entry, AV_DICT_IGNORE_SUFFIX))) {
    if (!list.empty()) list += ", ";
    list += entry->key;
  }
  return list;
}

std::string av_error_text(int error) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  if (av_strerror(error, text, sizeof text) < 0) {
    std::snprintf(text, sizeof text, "error %d", error);
  }
  return text;
}

void throw_io(const std::string& name, const std::string& what, int error) {
  std::string message = display_name(name) + ": " + what;
  if (error != 0) message += ": " + av_error_text(error);
  throw IoError(message);
}

void warn(const std::string& name, const std::string& text) {
  std::fprintf(stderr, "hazefree: warning: %s: %s\n", display_name(name).c_str(), text.c_str());
}

AVPixelFormat to_av_format(PixelFormat format) {
  switch (format) {
    case PixelFormat::yuv420p: return AV_PIX_FMT_YUV420P;
    case PixelFormat::yuv422p: return AV_PIX_FMT_YUV422P;
    case PixelFormat::yuv444p: return AV_PIX_FMT_YUV444P;
    case PixelFormat::nv12: return AV_PIX_FMT_NV12;
    case PixelFormat::gray8: return AV_PIX_FMT_GRAY8;
    case PixelFormat::rgb24: return AV_PIX_FMT_RGB24;
  }
  return AV_PIX_FMT_NONE;
}

bool from_av_format(AVPixelFormat format, PixelFormat* out) {
  switch (format) {
    case AV_PIX_FMT_YUV420P:
    case AV_PIX_FMT_YUVJ420P: *out = PixelFormat::yuv420p; return true;
    case AV_PIX_FMT_YUV422P:
    case AV_PIX_FMT_YUVJ422P: *out = PixelFormat::yuv422p; return true;
    case AV_PIX_FMT_YUV444P:
    case AV_PIX_FMT_YUVJ444P: *out = PixelFormat::yuv444p; return true;
    case AV_PIX_FMT_NV12: *out = PixelFormat::nv12; return true;
    case AV_PIX_FMT_GRAY8: *out = PixelFormat::gray8; return true;
    case AV_PIX_FMT_RGB24: *out = PixelFormat::rgb24; return true;
    default: return false;
  }
}

bool is_full_range_yuv_format(AVPixelFormat format) {
  return format == AV_PIX_FMT_YUVJ420P || format == AV_PIX_FMT_YUVJ422P ||
         format == AV_PIX_FMT_YUVJ444P || format == AV_PIX_FMT_YUVJ440P ||
         format == AV_PIX_FMT_YUVJ411P;
}

// Nearest layout, by what the pixels are: RGB-like (packed, planar, palette, Bayer, XYZ) ->
// rgb24; one component (with or without alpha, any depth) -> gray; YUV keeps its chroma
// subsampling at 8 bits (4:2:0 semi-planar, e.g. p010 or nv21 -> nv12; 4:1:1/4:1:0 round to the
// nearest coarser layout we have; alpha dropped).
PixelFormat nearest_supported(AVPixelFormat format) {
  const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(format);
  if (!desc) return PixelFormat::rgb24;
  if (desc->flags & (AV_PIX_FMT_FLAG_RGB | AV_PIX_FMT_FLAG_PAL | AV_PIX_FMT_FLAG_BAYER)) {
    return PixelFormat::rgb24;
  }
  const int colour_components = desc->nb_components - ((desc->flags & AV_PIX_FMT_FLAG_ALPHA) ? 1 : 0);
  if (colour_components == 1) return PixelFormat::gray8;
  if (colour_components != 3) return PixelFormat::rgb24;
  if (desc->name && std::string(desc->name).rfind("xyz", 0) == 0) return PixelFormat::rgb24;
  const int shift_x = desc->log2_chroma_w, shift_y = desc->log2_chroma_h;
  const bool semi_planar = av_pix_fmt_count_planes(format) == 2;
  if (shift_x >= 1 && shift_y >= 1) return semi_planar ? PixelFormat::nv12 : PixelFormat::yuv420p;
  if (shift_x >= 1) return PixelFormat::yuv422p;
  return PixelFormat::yuv444p;
}

int sws_matrix_id(ColorMatrix matrix) {
  switch (matrix) {
    case ColorMatrix::bt709: return SWS_CS_ITU709;
    case ColorMatrix::bt2020: return SWS_CS_BT2020;
    case ColorMatrix::bt601: break;
  }
  return SWS_CS_ITU601;
}

}  // namespace detail
}  // namespace hazefree::io
