// The last renders of a job end together. Once every chunk has its worker, a render that has
// fewer frames left than another render by more than a margin waits before it hands its encoder
// the next frame, so that its share of the cores goes to the renders behind it; the encoders'
// threads that go on fill the cores meanwhile. Without it the chunks of one wave, started
// together, ended 0.6-0.8 s apart on a 16-core host (the cores idle one by one as they end) and
// the first chunk, which needs no start state, more than a second before the others
// (docs/SCALING.md). Only the pace changes: every frame is the same.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>

namespace hazefree::jobs {

class EndPacer {
 public:
  // A render waits only while at least `others_to_fill_cores` other renders encode (their
  // encoder threads at least the cores), and only when it is more than `margin` frames ahead.
  EndPacer(int others_to_fill_cores, std::int64_t margin);

  // Every chunk has its worker now: pacing from here on.
  void last_wave();
  // `task`'s render handed its encoder a frame: `frames_left` remain.
  void wrote(int task, std::int64_t frames_left);
  // `task`'s render ended, however (done, failed, stopped): nobody waits for it any more.
  void ended(int task);
  // Whether wait(task) would wait now.
  bool ahead(int task) const;
  // Waits while `task` is ahead, until `stop` is set; returns the seconds waited.
  double wait(int task, const std::atomic<bool>& stop);

 private:
  bool ahead_locked(int task) const;

  const int others_to_fill_cores_;
  const std::int64_t margin_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<int, std::int64_t> frames_left_;  // the renders encoding now, by task
  bool last_wave_ = false;
};

}  // namespace hazefree::jobs
