// How much FFmpeg's own libraries print on stderr.
#pragma once

namespace hazefree::io {

enum class LogLevel { silent, quiet, normal, verbose };

// silent: fatal errors only; quiet: errors only; normal: warnings and errors; verbose: FFmpeg's
// informational messages too.
void set_ffmpeg_log_level(LogLevel level);

}  // namespace hazefree::io
