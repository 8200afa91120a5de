#include "io/av_error.hpp"

#include <cstdio>

#include "io/logging.hpp"

extern "C" {
#include <libavutil/error.h>
}

namespace hazefree::io::detail {

std::string av_error_text(int error) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  if (av_strerror(error, text, sizeof text) < 0) {
    std::snprintf(text, sizeof text, "error %d", error);
  }
  return text;
}

std::string ffmpeg_detail() {
  const std::string detail = last_ffmpeg_error();
  forget_ffmpeg_error();
  return detail.empty() ? "" : ": " + detail;
}

void throw_io(const std::string& name, const std::string& what, int error) {
  std::string message = display_name(name) + ": " + what;
  if (error != 0) message += ": " + av_error_text(error);
  throw IoError(message);
}

void warn(const std::string& name, const std::string& text) {
  warning(display_name(name) + ": " + text);
}

}  // namespace hazefree::io::detail
