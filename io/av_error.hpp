// Private to io/: owners for FFmpeg objects, error text, warnings, and the mapping between
// FFmpeg pixel formats and the project's PixelFormats.
#pragma once

#include <memory>
#include <string>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/dict.h>
#include <libavutil/frame.h>
#include <libswscale/swscale.h>
}

#include "io/media_reader.hpp"
#include "common/image.hpp"

namespace hazefree::io::detail {

// --- owners: one deleter per FFmpeg freeing function -----------------------------------------

struct CodecContextDeleter {
  void operator()(AVCodecContext* context) const { avcodec_free_context(&context); }
};
struct FrameDeleter {
  void operator()(AVFrame* frame) const { av_frame_free(&frame); }
};
struct SwsDeleter {
  void operator()(SwsContext* context) const { sws_freeContext(context); }
};
// A demuxer context opened by avformat_open_input.
struct InputContextDeleter {
  void operator()(AVFormatContext* context) const { avformat_close_input(&context); }
};
// A muxer context: closes its file (unless the muxer opens files itself) and frees it.
struct OutputContextDeleter {
  void operator()(AVFormatContext* context) const {
    if (context->pb && context->oformat && !(context->oformat->flags & AVFMT_NOFILE)) {
      avio_closep(&context->pb);
    }
    avformat_free_context(context);
  }
};

using CodecContextPtr = std::unique_ptr<AVCodecContext, CodecContextDeleter>;
using FramePtr = std::unique_ptr<AVFrame, FrameDeleter>;
using SwsPtr = std::unique_ptr<SwsContext, SwsDeleter>;
using InputContextPtr = std::unique_ptr<AVFormatContext, InputContextDeleter>;
using OutputContextPtr = std::unique_ptr<AVFormatContext, OutputContextDeleter>;

// An AVDictionary that frees itself; pass `slot()` where FFmpeg wants AVDictionary**.
class Dictionary {
 public:
  Dictionary() = default;
  ~Dictionary() { av_dict_free(&dict_); }
  Dictionary(const Dictionary&) = delete;
  Dictionary& operator=(const Dictionary&) = delete;
  void set(const std::string& key, const std::string& value) {
    av_dict_set(&dict_, key.c_str(), value.c_str(), 0);
  }
  AVDictionary** slot() { return &dict_; }
  AVDictionary* get() const { return dict_; }
  // "a, b, c": the keys FFmpeg left unused after an open call.
  std::string keys() const;

 private:
  AVDictionary* dict_ = nullptr;
};

// --- errors ----------------------------------------------------------------------------------

// FFmpeg's text for an AVERROR code, e.g. "No such file or directory".
std::string av_error_text(int error);
// IoError("NAME: WHAT: FFmpeg's text"), or "NAME: WHAT" when error is 0.
[[noreturn]] void throw_io(const std::string& name, const std::string& what, int error = 0);
// One line on stderr: "hazefree: warning: NAME: TEXT".
void warn(const std::string& name, const std::string& text);

// --- pixel formats ---------------------------------------------------------------------------

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
// (rounded up to one it has: RGB above 8 bits becomes rgb48 at 16). See av_error.cpp.
PixelFormat nearest_supported(AVPixelFormat format, int* depth = nullptr);
// Bits per sample of an FFmpeg format (its first component); 8 when unknown.
int av_format_depth(AVPixelFormat format);
bool is_full_range_yuv_format(AVPixelFormat format);  // yuvj420p, yuvj422p, yuvj444p

// The name to show for a URL in messages ("-" stays "-").
inline std::string display_name(const std::string& url) { return url.empty() ? "(none)" : url; }

}  // namespace hazefree::io::detail
