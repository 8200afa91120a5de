#include "io/picture_conversion.hpp"

extern "C" {
#include <libavutil/pixdesc.h>
}

#include "io/av_error.hpp"
#include "io/av_pixel_format.hpp"
#include "io/depth_convert.hpp"

namespace hazefree::io::detail {

PictureConversion::PictureConversion(std::string name) : name_(std::move(name)) {}

void PictureConversion::choose_layout(AVPixelFormat source_format, VideoInfo& info) {
  if (from_av_format(source_format, &info.format, &layout_depth_)) return;
  info.format = nearest_supported(source_format, &layout_depth_);
  // Big-endian samples (16-bit PNG) only have their bytes swapped: nothing to warn about.
  PixelFormat swapped{};
  int swapped_depth = 0;
  const bool byte_order_only = from_av_format(av_pix_fmt_swap_endianness(source_format), &swapped, &swapped_depth) &&
                               swapped == info.format && swapped_depth == layout_depth_;
  if (!byte_order_only) {
    warn(name_, "pixel format " + info.source_pixel_format + " converted to " +
                    hazefree::format_name(info.format, layout_depth_) + " with libswscale");
  }
  warned_conversion_ = true;
}

void PictureConversion::choose_device_layout(int depth, VideoInfo& info) {
  info.format = PixelFormat::nv12;
  layout_depth_ = depth;
}

void PictureConversion::choose_depth(int asked, VideoInfo& info) {
  info.depth = layout_depth_;
  if (asked == 0 || asked == layout_depth_) return;
  const std::string what = "output.depth = " + std::to_string(asked);
  if (!valid_depth(asked)) throw_io(name_, what + ": accepted depths are 8 to 16 bits");
  if (info.on_device) {
    throw_io(name_, what + ": the GPU pictures (--hwdec cuda) stay at their own " + std::to_string(layout_depth_) +
                        " bits; run without --hwdec to convert them");
  }
  if (info.format == PixelFormat::rgb24 && asked != 8 && asked != 16)
    throw_io(name_, what + ": RGB pictures are processed at 8 or 16 bits (rgb24, rgb48)");
  if (info.format == PixelFormat::nv12 && to_av_format(PixelFormat::nv12, asked) == AV_PIX_FMT_NONE) {
    // No semi-planar layout at that depth: planar 4:2:0 (libswscale only moves the chroma).
    info.format = PixelFormat::yuv420p;
    warned_conversion_ = true;
  }
  info.depth = asked;
}

ImageView PictureConversion::convert(AVFrame& frame, const VideoInfo& info) {
  const AVFrame& pixels = to_layout(frame, info);
  ImageView view{};
  view.format = info.format;
  view.width = info.width;
  view.height = info.height;
  view.matrix = info.matrix;
  view.range = info.range;
  view.depth = layout_depth_;
  view.plane_count = plane_count(info.format);
  for (int i = 0; i < view.plane_count; ++i) {
    PlaneView plane = plane_geometry(info.format, info.width, info.height, i, layout_depth_);
    plane.data = pixels.data[i];
    plane.stride = pixels.linesize[i];
    view.planes[i] = plane;
  }
  if (info.depth == layout_depth_) return view;
  if (depth_converted_.empty()) depth_converted_ = Image(info.format, info.width, info.height, 64, info.depth);
  convert_depth(view, depth_converted_.view());
  return depth_converted_.view();
}

// The picture itself where it has the layout and size announced in VideoInfo; else converted
// (and, after a mid-stream size change, rescaled) into a buffer allocated once.
const AVFrame& PictureConversion::to_layout(AVFrame& frame, const VideoInfo& info) {
  const auto source_format = static_cast<AVPixelFormat>(frame.format);
  PixelFormat layout{};
  int depth = 8;
  const bool same_layout =
      from_av_format(source_format, &layout, &depth) && layout == info.format && depth == layout_depth_;
  if (same_layout && frame.width == info.width && frame.height == info.height && frame.linesize[0] >= 0 &&
      frame.linesize[1] >= 0 && frame.linesize[2] >= 0)
    return frame;

  const AVPixelFormat target_format = to_av_format(info.format, layout_depth_);
  if ((frame.width != info.width || frame.height != info.height) && !warned_size_change_) {
    warn(name_, "picture size changed from " + std::to_string(info.width) + "x" + std::to_string(info.height) +
                    " to " + std::to_string(frame.width) + "x" + std::to_string(frame.height) +
                    "; scaling back to the first size");
    warned_size_change_ = true;
  }
  if (!warned_conversion_ && !same_layout) {
    const char* format_name = av_get_pix_fmt_name(source_format);
    warn(name_, std::string("pixel format changed to ") + (format_name ? format_name : "unknown") +
                    "; converted to " + hazefree::format_name(info.format, layout_depth_) + " with libswscale");
    warned_conversion_ = true;
  }
  if (!converted_) {
    converted_.reset(av_frame_alloc());
    if (!converted_) throw_io(name_, "out of memory");
    converted_->format = target_format;
    converted_->width = info.width;
    converted_->height = info.height;
    const int result = av_frame_get_buffer(converted_.get(), 0);
    if (result < 0) throw_io(name_, "cannot allocate a conversion buffer", result);
  }
  SwsContext* context = sws_getCachedContext(scaler_.release(), frame.width, frame.height, source_format, info.width,
                                             info.height, target_format,
                                             SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, nullptr, nullptr,
                                             nullptr);
  scaler_.reset(context);
  if (!context) {
    throw_io(name_, "libswscale cannot convert " + info.source_pixel_format + " to " +
                        hazefree::format_name(info.format, layout_depth_));
  }
  // Keep the range and matrix: a limited-range picture stays a limited-range one.
  const int source_range =
      (is_full_range_yuv_format(source_format) || frame.color_range == AVCOL_RANGE_JPEG || !is_yuv_layout(source_format))
          ? 1
          : 0;
  const int target_range = info.range == ColorRange::full ? 1 : 0;
  const int* coefficients = sws_getCoefficients(sws_matrix_id(info.matrix));
  sws_setColorspaceDetails(context, coefficients, source_range, coefficients, target_range, 0, 1 << 16, 1 << 16);
  sws_scale(context, frame.data, frame.linesize, 0, frame.height, converted_->data, converted_->linesize);
  return *converted_;
}

}  // namespace hazefree::io::detail
