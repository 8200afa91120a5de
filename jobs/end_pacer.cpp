#include "jobs/end_pacer.hpp"

#include <algorithm>
#include <chrono>

namespace hazefree::jobs {

EndPacer::EndPacer(int others_to_fill_cores, std::int64_t margin)
    : others_to_fill_cores_(std::max(1, others_to_fill_cores)), margin_(std::max<std::int64_t>(0, margin)) {}

void EndPacer::last_wave() {
  {
    std::lock_guard lock(mutex_);
    last_wave_ = true;
  }
  changed_.notify_all();
}

void EndPacer::wrote(int task, std::int64_t frames_left) {
  {
    std::lock_guard lock(mutex_);
    frames_left_[task] = frames_left;
  }
  changed_.notify_all();
}

void EndPacer::ended(int task) {
  {
    std::lock_guard lock(mutex_);
    frames_left_.erase(task);
  }
  changed_.notify_all();
}

bool EndPacer::ahead(int task) const {
  std::lock_guard lock(mutex_);
  return ahead_locked(task);
}

bool EndPacer::ahead_locked(int task) const {
  const auto own = frames_left_.find(task);
  if (!last_wave_ || own == frames_left_.end()) return false;
  if (static_cast<int>(frames_left_.size()) - 1 < others_to_fill_cores_) return false;
  return std::any_of(frames_left_.begin(), frames_left_.end(),
                     [&](const auto& other) { return other.second > own->second + margin_; });
}

double EndPacer::wait(int task, const std::atomic<bool>& stop) {
  const auto began = std::chrono::steady_clock::now();
  std::unique_lock lock(mutex_);
  // Woken by every frame of the others; the timeout only bounds how late a stop is seen.
  while (!stop.load() && ahead_locked(task)) changed_.wait_for(lock, std::chrono::milliseconds(50));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
}

}  // namespace hazefree::jobs
