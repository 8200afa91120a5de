#include "io/logging.hpp"

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <string>

#include "io/run_log_level.hpp"
#include "io/url.hpp"

extern "C" {
#include <libavutil/log.h>
}

namespace hazefree::io {
namespace {

// A line is written once it is whole: FFmpeg may build one with several calls, and a URL cut in
// two could not be redacted. Each thread keeps its own partial line (and whether the next call
// starts a line, which decides the "[name @ 0x...]" prefix), as threads log at once.
struct PartialLine {
  std::string text;
  int print_prefix = 1;
};

constexpr std::size_t kLongestLine = 16384;  // a line without an end is written at this length

std::mutex& output_mutex() {
  static std::mutex mutex;
  return mutex;
}

void write_redacted(std::string& text) {
  // As FFmpeg's own callback does, control characters other than line breaks and tabs are
  // shown as '?' (a source's metadata must not move the terminal's cursor).
  for (char& c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 && c != '\n' && c != '\r' && c != '\t') c = '?';
  }
  const std::string line = redact_urls(text);
  text.clear();
  std::lock_guard lock(output_mutex());
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

thread_local std::string t_last_error;  // last_ffmpeg_error()

void redacting_callback(void* context, int level, const char* format, va_list arguments) {
  const int plain_level = level >= 0 ? level & 0xff : level;  // the bits above 0xff are a colour
  if (plain_level <= AV_LOG_ERROR) {
    char text[512];
    va_list copy;
    va_copy(copy, arguments);
    const int length = std::vsnprintf(text, sizeof text, format, copy);
    va_end(copy);
    if (length > 0) {
      std::string line(text, std::min(static_cast<std::size_t>(length), sizeof text - 1));
      while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' ')) line.pop_back();
      if (!line.empty()) t_last_error = redact_urls(line);
    }
  }
  // FFmpeg's own level filter, as in av_log_default_callback.
  if (plain_level > av_log_get_level()) return;
  thread_local PartialLine partial;
  char buffer[1024];
  const int prefix = partial.print_prefix;  // the call below updates it for the next line
  va_list copy;
  va_copy(copy, arguments);
  int length = av_log_format_line2(context, level, format, copy, buffer, sizeof buffer, &partial.print_prefix);
  va_end(copy);
  if (length < 0) return;
  if (static_cast<std::size_t>(length) < sizeof buffer) {
    partial.text.append(buffer, static_cast<std::size_t>(length));
  } else {  // longer than the buffer: formatted again, whole
    std::string whole(static_cast<std::size_t>(length) + 1, '\0');
    partial.print_prefix = prefix;
    va_copy(copy, arguments);
    length = av_log_format_line2(context, level, format, copy, whole.data(), static_cast<int>(whole.size()),
                                 &partial.print_prefix);
    va_end(copy);
    if (length < 0) return;
    whole.resize(std::min(whole.size() - 1, static_cast<std::size_t>(length)));
    partial.text += whole;
  }
  const char last = partial.text.empty() ? '\0' : partial.text.back();
  if (last == '\n' || last == '\r' || partial.text.size() >= kLongestLine) write_redacted(partial.text);
}

}  // namespace

void install_ffmpeg_log_callback() {
  static std::once_flag once;
  std::call_once(once, [] { av_log_set_callback(redacting_callback); });
}

namespace {
std::atomic<bool> g_warnings_shown{true};
}  // namespace

void show_warnings(bool shown) { g_warnings_shown.store(shown); }

void warning(const std::string& text) {
  if (!g_warnings_shown.load()) return;
  std::fprintf(stderr, "hazefree: warning: %s\n", redact_urls(text).c_str());
}

std::string last_ffmpeg_error() { return t_last_error; }
void forget_ffmpeg_error() { t_last_error.clear(); }

namespace {
std::atomic<bool> g_level_chosen{false};  // set_ffmpeg_log_level() was called: the program's choice

// The runs of RunLogLevel under way, those of them verbose, and the host's level before the first.
struct RunLevels {
  std::mutex mutex;
  int runs = 0;
  int verbose_runs = 0;
  int host_level = AV_LOG_INFO;
};
RunLevels& run_levels() {
  static RunLevels levels;
  return levels;
}
void set_run_level(const RunLevels& levels) {
  av_log_set_level(levels.verbose_runs > 0 ? std::max(levels.host_level, AV_LOG_INFO) : AV_LOG_FATAL);
}
}  // namespace

RunLogLevel::RunLogLevel(bool verbose) : verbose_(verbose) {
  if (g_level_chosen.load()) return;
  RunLevels& levels = run_levels();
  std::lock_guard lock(levels.mutex);
  if (levels.runs++ == 0) levels.host_level = av_log_get_level();
  if (verbose_) ++levels.verbose_runs;
  counted_ = true;
  set_run_level(levels);
}

RunLogLevel::~RunLogLevel() {
  if (!counted_) return;
  RunLevels& levels = run_levels();
  std::lock_guard lock(levels.mutex);
  if (verbose_) --levels.verbose_runs;
  if (--levels.runs == 0)
    av_log_set_level(levels.host_level);
  else
    set_run_level(levels);
}

void set_ffmpeg_log_level(LogLevel level) {
  g_level_chosen.store(true);
  install_ffmpeg_log_callback();
  switch (level) {
    case LogLevel::silent: av_log_set_level(AV_LOG_FATAL); break;
    case LogLevel::quiet: av_log_set_level(AV_LOG_ERROR); break;
    case LogLevel::normal: av_log_set_level(AV_LOG_WARNING); break;
    case LogLevel::verbose: av_log_set_level(AV_LOG_INFO); break;
  }
}

}  // namespace hazefree::io
