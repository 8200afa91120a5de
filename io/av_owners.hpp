// Private to io/: owners for FFmpeg objects, one deleter per FFmpeg freeing function, and an
// AVDictionary that frees itself.
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

namespace hazefree::io::detail {

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

}  // namespace hazefree::io::detail
