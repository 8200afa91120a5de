// Private to io/: FFmpeg's error text, the IoError thrown with it, warnings, and the name of an
// input or output in messages.
#pragma once

#include <string>

#include "io/media_reader.hpp"
#include "io/url.hpp"

namespace hazefree::io::detail {

// FFmpeg's text for an AVERROR code, e.g. "No such file or directory".
std::string av_error_text(int error);
// IoError("NAME: WHAT: FFmpeg's text"), or "NAME: WHAT" when error is 0.
[[noreturn]] void throw_io(const std::string& name, const std::string& what, int error = 0);
// ": what FFmpeg last logged as an error on this thread" (io/logging.hpp) when it logged one
// since forget_ffmpeg_error(), else empty: appended to a failed call's message.
std::string ffmpeg_detail();
// One line on stderr: "hazefree: warning: NAME: TEXT".
void warn(const std::string& name, const std::string& text);

// The name to show for a URL in messages ("-" stays "-"), its secrets hidden (redact_urls).
inline std::string display_name(const std::string& url) { return url.empty() ? "(none)" : redact_urls(url); }

}  // namespace hazefree::io::detail
