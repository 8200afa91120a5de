#include "pipeline/progress.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace hazefree {

std::string clock_text(double seconds) {
  const auto s = static_cast<long long>(seconds + 0.5);
  return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
}

namespace {

// ffmpeg's HH:MM:SS.cc of a stats line, or HH:MM:SS.uuuuuu of out_time.
std::string media_time(double seconds, int decimals) {
  const double scale = decimals == 2 ? 100.0 : 1e6;
  const auto units = static_cast<long long>(std::llround(std::max(0.0, seconds) * scale));
  const auto whole = static_cast<long long>(units / static_cast<long long>(scale));
  const long long frac = units % static_cast<long long>(scale);
  return fmt::format("{:02}:{:02}:{:02}.{:0{}}", whole / 3600, whole / 60 % 60, whole % 60, frac, decimals);
}

bool write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

int standard_stream_of(const std::string& option, const std::string& url) {
  if (url == "-" || url == "pipe:" || url == "pipe:1") return 1;
  if (url == "pipe:2") return 2;
  if (url.rfind("pipe:", 0) == 0)
    throw std::invalid_argument(option + " " + url + ": give pipe:1 (stdout), pipe:2 (stderr) or a file");
  if (url.rfind("file:", 0) == 0) return -1;
  const auto scheme = url.find("://");
  if (scheme != std::string::npos)
    throw std::invalid_argument(option + " " + url + ": give pipe:1 (stdout), pipe:2 (stderr) or a file; "
                                "other protocols are not written to");
  return -1;
}

std::string progress_text(const ProgressFigures& f) {
  std::string line = f.frames_total > 0 ? fmt::format("frame={:>5}/{}", f.frames, f.frames_total)
                                        : fmt::format("frame={:>5}", f.frames);
  line += fmt::format(" fps={:>3.{}f}", f.fps, f.fps < 9.95 ? 1 : 0);
  if (f.out_seconds >= 0) line += " time=" + media_time(f.out_seconds, 2);
  if (f.speed >= 0) line += fmt::format(" speed={:.3g}x", f.speed);
  line += " elapsed=" + clock_text(f.elapsed_seconds);
  if (f.frames_total > 0) {
    const std::int64_t left = std::max<std::int64_t>(0, f.frames_total - f.frames);
    line += " eta=" + (left == 0 ? clock_text(0) : f.fps > 0 ? clock_text(static_cast<double>(left) / f.fps) : "?");
  }
  return line;
}

Progress::Progress(const ProgressOptions& options, bool quiet, std::int64_t expected_frames, double frame_rate)
    : line_enabled_(options.line == ProgressOptions::Line::on ||
                    (options.line == ProgressOptions::Line::automatic && !quiet)),
      on_terminal_(isatty(STDERR_FILENO) != 0),
      expected_(expected_frames),
      frame_rate_(frame_rate > 0 && std::isfinite(frame_rate) ? frame_rate : 0.0),
      start_(std::chrono::steady_clock::now()),
      last_line_(start_),
      last_report_(start_) {
  const double period = options.period_seconds;
  line_period_ = std::chrono::duration<double>(period > 0 ? period : on_terminal_ ? 0.5 : 5.0);
  report_period_ = std::chrono::duration<double>(period > 0 ? period : 0.5);
  if (!options.url.empty()) {
    report_fd_ = standard_stream_of("-progress", options.url);  // checked when parsed: no throw here
    if (report_fd_ < 0) {
      const std::string path = options.url.rfind("file:", 0) == 0 ? options.url.substr(5) : options.url;
      report_fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (report_fd_ < 0)
        throw std::runtime_error(fmt::format("-progress {}: cannot write it: {}", options.url, std::strerror(errno)));
      report_owned_ = true;
    }
  }
}

Progress::~Progress() {
  if (report_owned_) ::close(report_fd_);
}

ProgressFigures Progress::figures(std::int64_t frames, std::chrono::steady_clock::time_point now) const {
  ProgressFigures f;
  f.frames = frames;
  f.frames_total = expected_;
  f.elapsed_seconds = std::chrono::duration<double>(now - start_).count();
  f.fps = f.elapsed_seconds > 0 ? static_cast<double>(frames) / f.elapsed_seconds : 0.0;
  if (frame_rate_ > 0) {
    f.out_seconds = static_cast<double>(frames) / frame_rate_;
    if (f.elapsed_seconds > 0) f.speed = f.out_seconds / f.elapsed_seconds;
  }
  return f;
}

void Progress::report(const ProgressFigures& f, bool last) {
  const auto us = static_cast<long long>(std::llround(std::max(0.0, f.out_seconds) * 1e6));
  const bool known = f.out_seconds >= 0;
  const std::string block = fmt::format(
      "frame={}\nfps={:.2f}\nbitrate=N/A\ntotal_size=N/A\nout_time_us={}\nout_time_ms={}\nout_time={}\n"
      "dup_frames=0\ndrop_frames=0\nspeed={}\nprogress={}\n",
      f.frames, f.fps, known ? std::to_string(us) : "N/A", known ? std::to_string(us) : "N/A",
      known ? media_time(f.out_seconds, 6) : "N/A", f.speed >= 0 ? fmt::format("{:.3g}x", f.speed) : "N/A",
      last ? "end" : "continue");
  if (write_all(report_fd_, block)) return;
  // A reader gone (a closed pipe) or a full disk: the run goes on without the report.
  if (report_owned_) ::close(report_fd_);
  report_fd_ = -1;
  report_owned_ = false;
}

void Progress::frame_done(std::int64_t frames) {
  frames_ = frames;
  if (!line_enabled_ && report_fd_ < 0) return;
  const auto now = std::chrono::steady_clock::now();
  const bool line_due = line_enabled_ && now - last_line_ >= line_period_;
  const bool report_due = report_fd_ >= 0 && now - last_report_ >= report_period_;
  if (!line_due && !report_due) return;
  const ProgressFigures f = figures(frames, now);
  if (line_due) {
    last_line_ = now;
    if (on_terminal_) {
      fmt::print(stderr, "\r{}\x1b[K", progress_text(f));
      drawn_ = true;
    } else {
      fmt::print(stderr, "{}\n", progress_text(f));
    }
  }
  if (report_due) {
    last_report_ = now;
    report(f, false);
  }
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  const ProgressFigures f = figures(frames_, std::chrono::steady_clock::now());
  if (line_enabled_ && (drawn_ || frames_ > 0)) {
    if (on_terminal_) fmt::print(stderr, "\r{}\x1b[K\n", progress_text(f));
    else fmt::print(stderr, "{}\n", progress_text(f));
  }
  drawn_ = false;
  if (report_fd_ >= 0) report(f, true);
}

}  // namespace hazefree
