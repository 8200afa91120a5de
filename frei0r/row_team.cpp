#include "row_team.hpp"

#include <algorithm>

namespace hazefree_frei0r {

RowTeam::RowTeam(int helpers) {
  for (int i = 0; i < helpers; ++i) threads_.emplace_back([this, i] { serve(i + 1); });
}

RowTeam::~RowTeam() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  start_.notify_all();
  for (std::thread& t : threads_) t.join();
}

int RowTeam::default_helpers() {
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(cores / 2 - 1, 0, 7);
}

void RowTeam::part(int index, std::ptrdiff_t count) const {
  const auto parts = static_cast<std::ptrdiff_t>(threads_.size()) + 1;
  const std::ptrdiff_t begin = count * index / parts;
  const std::ptrdiff_t end = count * (index + 1) / parts;
  if (begin < end) (*body_)(begin, end);
}

void RowTeam::serve(int index) {
  unsigned long seen = 0;
  for (;;) {
    std::ptrdiff_t count = 0;
    {
      std::unique_lock lock(mutex_);
      start_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      count = count_;
    }
    part(index, count);
    {
      std::lock_guard lock(mutex_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
}

void RowTeam::run(std::ptrdiff_t count, const std::function<void(std::ptrdiff_t, std::ptrdiff_t)>& body) {
  if (threads_.empty()) {
    body(0, count);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    body_ = &body;
    count_ = count;
    pending_ = static_cast<int>(threads_.size());
    ++generation_;
  }
  start_.notify_all();
  part(0, count);
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return pending_ == 0; });
  body_ = nullptr;
}

}  // namespace hazefree_frei0r
