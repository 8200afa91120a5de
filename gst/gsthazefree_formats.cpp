#include "gsthazefree_formats.hpp"

namespace hazefree_gst {
namespace {

hazefree::FrameMatrix frame_matrix(const GstVideoInfo& info) {
  switch (GST_VIDEO_INFO_COLORIMETRY(&info).matrix) {
    case GST_VIDEO_COLOR_MATRIX_BT601: return hazefree::FrameMatrix::bt601;
    case GST_VIDEO_COLOR_MATRIX_BT709: return hazefree::FrameMatrix::bt709;
    case GST_VIDEO_COLOR_MATRIX_BT2020: return hazefree::FrameMatrix::bt2020;
    default: return hazefree::FrameMatrix::automatic;
  }
}

hazefree::FrameRange frame_range(const GstVideoInfo& info) {
  switch (GST_VIDEO_INFO_COLORIMETRY(&info).range) {
    case GST_VIDEO_COLOR_RANGE_0_255: return hazefree::FrameRange::full;
    case GST_VIDEO_COLOR_RANGE_16_235: return hazefree::FrameRange::limited;
    default: return hazefree::FrameRange::automatic;
  }
}

}  // namespace

const char* caps_formats() {
  static const std::string list = [] {
    std::string text;
    for (const char* name : kEightBitFormats) text += std::string(text.empty() ? "" : ", ") + name;
    for (const char* name : kDeepFormats) text += std::string(", ") + name;
    return "{ " + text + " }";
  }();
  return list.c_str();
}

hazefree::Frame api_frame(GstVideoFrame* frame) {
  auto data = [frame](int i) { return GST_VIDEO_FRAME_PLANE_DATA(frame, i); };
  auto stride = [frame](int i) { return static_cast<std::ptrdiff_t>(GST_VIDEO_FRAME_PLANE_STRIDE(frame, i)); };
  const int width = GST_VIDEO_FRAME_WIDTH(frame);
  const int height = GST_VIDEO_FRAME_HEIGHT(frame);
  // Bits per sample: the format's own (10 for I420_10LE and P010_10LE, 16 for GRAY16_LE).
  const int depth = static_cast<int>(GST_VIDEO_FORMAT_INFO_DEPTH(frame->info.finfo, 0));
  hazefree::Frame f;
  switch (GST_VIDEO_FRAME_FORMAT(frame)) {
    case GST_VIDEO_FORMAT_I420:
    case GST_VIDEO_FORMAT_I420_10LE:
    case GST_VIDEO_FORMAT_I420_12LE:
      f = hazefree::Frame::i420(data(0), stride(0), data(1), stride(1), data(2), stride(2), width, height, depth);
      break;
    case GST_VIDEO_FORMAT_Y42B:
    case GST_VIDEO_FORMAT_I422_10LE:
    case GST_VIDEO_FORMAT_I422_12LE:
      f = hazefree::Frame::yuv422p(data(0), stride(0), data(1), stride(1), data(2), stride(2), width, height, depth);
      break;
    case GST_VIDEO_FORMAT_Y444:
    case GST_VIDEO_FORMAT_Y444_10LE:
    case GST_VIDEO_FORMAT_Y444_12LE:
    case GST_VIDEO_FORMAT_Y444_16LE:
      f = hazefree::Frame::yuv444p(data(0), stride(0), data(1), stride(1), data(2), stride(2), width, height, depth);
      break;
    case GST_VIDEO_FORMAT_NV12:
    case GST_VIDEO_FORMAT_P010_10LE:
    case GST_VIDEO_FORMAT_P012_LE:
    case GST_VIDEO_FORMAT_P016_LE:
      f = hazefree::Frame::nv12(data(0), stride(0), data(1), stride(1), width, height, depth);
      break;
    case GST_VIDEO_FORMAT_GRAY16_LE: f = hazefree::Frame::gray16(data(0), width, height, stride(0), depth); break;
    default: f = hazefree::Frame::gray8(data(0), width, height, stride(0)); break;
  }
  f.matrix = frame_matrix(frame->info);
  f.range = frame_range(frame->info);
  return f;
}

}  // namespace hazefree_gst
