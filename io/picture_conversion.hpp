// Private to io/: how a decoded picture becomes what a reader delivers (VideoInfo's format, size
// and depth). The decoder's own picture is delivered as it is where it already has that layout;
// any other (an unsupported format, a mid-stream change of format or size) is converted once
// with libswscale to the layout nearest to the first picture's, at the same depth, and scaled
// back to the first size; then, where InputOptions::depth asks for another depth, converted to
// it by the rule of common/sample_depth.hpp (io/depth_convert.hpp). Buffers are allocated once.
#pragma once

#include <string>

extern "C" {
#include <libavutil/frame.h>
#include <libavutil/pixfmt.h>
}

#include "common/image.hpp"
#include "io/av_owners.hpp"
#include "io/media_reader.hpp"

namespace hazefree::io::detail {

class PictureConversion {
 public:
  // `name`: the input, for messages.
  explicit PictureConversion(std::string name);

  // The layout of the pictures for the first one's `source_format` (a picture in memory): its
  // own where it is one of the PixelFormats, else the nearest one (said once, unless only the
  // byte order differs). Sets info.format; needs info.source_pixel_format.
  void choose_layout(AVPixelFormat source_format, VideoInfo& info);
  // GPU pictures (--hwdec): nv12 at `depth`, the value in the high bits above 8 bits.
  void choose_device_layout(int depth, VideoInfo& info);
  // The depth delivered: the layout's own, or `asked` (InputOptions::depth, 0: the layout's).
  // Sets info.depth, and info.format to yuv420p where nv12 has no layout at that depth. Throws
  // IoError for a depth that cannot be delivered (GPU pictures, RGB other than 8 or 16 bits).
  void choose_depth(int asked, VideoInfo& info);
  // The layout's bits per sample before the depth conversion (info.depth differs from it when
  // InputOptions::depth asks for another).
  int layout_depth() const { return layout_depth_; }

  // A decoded picture in memory as `info` describes: a view of `frame` itself where it already
  // is, else of the conversion's buffers (valid until the next call).
  ImageView convert(AVFrame& frame, const VideoInfo& info);

 private:
  const AVFrame& to_layout(AVFrame& frame, const VideoInfo& info);

  std::string name_;
  int layout_depth_ = 8;
  FramePtr converted_;  // allocated on the first picture that needs libswscale
  SwsPtr scaler_;
  Image depth_converted_;  // InputOptions::depth: the picture at info.depth
  bool warned_conversion_ = false;
  bool warned_size_change_ = false;
};

}  // namespace hazefree::io::detail
