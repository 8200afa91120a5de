// How much FFmpeg's own libraries print on stderr, and how their lines are written.
#pragma once

namespace hazefree::io {

enum class LogLevel { silent, quiet, normal, verbose };

// silent: fatal errors only; quiet: errors only; normal: warnings and errors; verbose: FFmpeg's
// informational messages too. Also installs the log callback below.
void set_ffmpeg_log_level(LogLevel level);

// Replaces FFmpeg's log callback (once per process; later calls do nothing) with one that writes
// each line as FFmpeg would, "[tcp @ 0x...] " prefix included and filtered by the level set with
// av_log_set_level (set_ffmpeg_log_level), but with the secrets of every URL in it hidden
// (redact_urls, io/url.hpp): "[tcp @ 0x...] Connection to tcp://***@127.0.0.1:9 failed".
// Programs (the command line, the service) call it at start; a library leaves the host
// program's own callback alone.
void install_ffmpeg_log_callback();

}  // namespace hazefree::io
