// The element's formats (the one list its caps and its refusals are made from) and its frames as
// frames of the public API.
#pragma once

#include <gst/video/video.h>

#include <hazefree/hazefree.hpp>

#include <cstddef>
#include <string>

namespace hazefree_gst {

// The 8-bit formats first: where upstream offers several, negotiation keeps 8-bit video 8-bit.
// Then those of two-byte samples that map onto the library's frames as they are: planar YUV
// 4:2:0/4:2:2/4:4:4 and grey with the value in the low bits (little-endian, as the library's
// samples are native-endian on the little-endian hosts it is built for), and P010/P012/P016
// with the value in the high bits (hazefree::Frame::nv12 at depth).
// The one list of formats: the caps and the messages are made from it.
constexpr const char* kEightBitFormats[] = {"I420", "NV12", "GRAY8", "Y42B", "Y444"};
constexpr const char* kDeepFormats[] = {"I420_10LE", "I420_12LE", "I422_10LE", "I422_12LE",
                                        "Y444_10LE", "Y444_12LE", "Y444_16LE", "P010_10LE",
                                        "P012_LE",   "P016_LE",   "GRAY16_LE"};

// "{ I420, NV12, ..., GRAY16_LE }": every format, as a caps list.
const char* caps_formats();

// "I420, NV12, ... or Y444": a list of formats, in words.
template <std::size_t count>
std::string in_words(const char* const (&formats)[count]) {
  std::string text;
  for (std::size_t i = 0; i < count; ++i)
    text += std::string(i == 0 ? "" : i + 1 == count ? " or " : ", ") + formats[i];
  return text;
}

// A mapped GstVideoFrame as a frame of the public API (no copy).
hazefree::Frame api_frame(GstVideoFrame* frame);

}  // namespace hazefree_gst
