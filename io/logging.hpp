// How much FFmpeg's own libraries print on stderr, and how their lines are written.
#pragma once

#include <string>

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

// What FFmpeg's libraries last logged at error level on this thread, whatever the level shown
// (the callback above only): its text without the prefix or the line's end, URL secrets hidden;
// empty when none since forget_ffmpeg_error(). It says what a failed call's code does not
// ("Generic error in an external library": "width not divisible by 2 (321x241)").
std::string last_ffmpeg_error();
void forget_ffmpeg_error();

// hazefree's own warnings: "hazefree: warning: TEXT" on stderr, URL secrets hidden, unless hidden
// for the whole process (the command line's -q, and ffmpeg's -loglevel error and below, show
// errors only; a library shows them).
void warning(const std::string& text);
void show_warnings(bool shown);

}  // namespace hazefree::io
