#include "io/stall_watch.hpp"

#include <cstdio>

#include "io/av_error.hpp"
#include "io/clock.hpp"

extern "C" {
#include <libavformat/avformat.h>
}

namespace hazefree::io::detail {

StallWatch::StallWatch(double timeout_seconds) : timeout_us_(static_cast<std::int64_t>(timeout_seconds * 1e6)) {}

void StallWatch::watch_from_now() {
  stalled_.store(false);
  last_progress_us_.store(steady_now_us());
}

void StallWatch::watch_opening(AVFormatContext* context) {
  opening_ = context;
  if (!context) return;
  opening_thread_ = pthread_self();
  opening_bytes_ = -1;
}

void StallWatch::before_read() {
  if (!read_again_) last_progress_us_.store(steady_now_us());
}

bool StallWatch::answered_again(int read_result) {
  read_again_ = read_result == AVERROR(EAGAIN);
  return read_again_;
}

bool StallWatch::expired() {
  if (timeout_us_ <= 0) return false;
  if (stalled_.load()) return true;
  const std::int64_t now = steady_now_us();
  // Only the reading thread looks at the context being opened (the UDP receiving thread may
  // call this too): it is the one that sets it.
  if (pthread_equal(opening_thread_, pthread_self()) && opening_ && opening_->pb &&
      opening_->pb->bytes_read != opening_bytes_) {
    opening_bytes_ = opening_->pb->bytes_read;
    last_progress_us_.store(now);
    return false;
  }
  if (now - last_progress_us_.load() < timeout_us_) return false;
  stalled_.store(true);
  return true;
}

void StallWatch::throw_stall(const std::string& name) const {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%g s", timeout_us_ / 1e6);
  throw StallError(display_name(name) + ": no data for " + seconds + " (input.timeout)");
}

}  // namespace hazefree::io::detail
