#include "pipeline/progress.hpp"

#include <unistd.h>

#include <fmt/format.h>

namespace hazefree {

std::string clock_text(double seconds) {
  const auto s = static_cast<long long>(seconds + 0.5);
  return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
}

Progress::Progress(bool quiet, std::int64_t expected_frames)
    : enabled_(!quiet && isatty(STDERR_FILENO)),
      expected_(expected_frames),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

void Progress::frame_done(std::int64_t frames) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(250)) return;
  last_draw_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double fps = elapsed > 0 ? frames / elapsed : 0.0;
  std::string line = fmt::format("\rframe {:>7}  {:7.1f} fps  elapsed {}", frames, fps, clock_text(elapsed));
  if (expected_ > 0 && fps > 0 && frames <= expected_)
    line += fmt::format("  eta {}  ({:.0f}%)", clock_text((expected_ - frames) / fps), 100.0 * frames / expected_);
  fmt::print(stderr, "{}\x1b[K", line);
  drawn_ = true;
}

void Progress::finish() {
  if (enabled_ && drawn_) fmt::print(stderr, "\n");
  drawn_ = false;
}

}  // namespace hazefree
