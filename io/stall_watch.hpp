// Private to io/: the stall watch of a reader (input.timeout, SPEC 9). FFmpeg calls the reader's
// interrupt callback while it waits for input (every 100 ms or so, from the reading thread and
// from the UDP receiving thread); once nothing has arrived for the timeout, the watch says so and
// the callback ends the blocked call. Progress is a packet, and while opening also a byte read.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <string>

struct AVFormatContext;

namespace hazefree::io::detail {

class StallWatch {
 public:
  // `timeout_seconds` without progress is a stall; 0 (or less): never.
  explicit StallWatch(double timeout_seconds);

  // A new wait begins (opening, reconnecting): the last stall is forgotten and the time counts
  // from now.
  void watch_from_now();
  // While `context` opens on the calling thread (the reading thread), each byte it reads counts
  // as progress; null when the opening is over.
  void watch_opening(AVFormatContext* context);

  // Around each av_read_frame: the wait for a packet starts now (the caller may have held the
  // reading thread back), or at the first of a run of EAGAIN answers...
  void before_read();
  // ... and true when the read answered EAGAIN (a non-blocking device with nothing yet).
  bool answered_again(int read_result);
  // The reader's connection closed: the next read is a first one.
  void forget_reads() { read_again_ = false; }

  // Whether the timeout has passed without progress; once true, true until watch_from_now().
  // Called from the interrupt callback, on the reading thread and FFmpeg's own I/O threads.
  bool expired();
  bool stalled() const { return stalled_.load(); }
  // StallError "NAME: no data for 5 s (input.timeout)".
  [[noreturn]] void throw_stall(const std::string& name) const;

 private:
  std::int64_t timeout_us_ = 0;
  std::atomic<std::int64_t> last_progress_us_{0};
  std::atomic<bool> stalled_{false};
  AVFormatContext* opening_ = nullptr;  // the context being opened (reading thread only)
  pthread_t opening_thread_{};
  std::int64_t opening_bytes_ = -1;
  bool read_again_ = false;  // the last read answered EAGAIN
};

}  // namespace hazefree::io::detail
