// Private to io/: what the name of an input or output is.
#pragma once

#include <string>

namespace hazefree::io::detail {

// True for "-", "pipe:..." and names with "://": streams FFmpeg opens itself, not files.
inline bool is_url(const std::string& url) {
  return url == "-" || url.find("://") != std::string::npos || url.rfind("pipe:", 0) == 0;
}

}  // namespace hazefree::io::detail
