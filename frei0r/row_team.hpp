// A few threads that split a loop over pixels with the calling thread, and sleep between calls.
//
// The filter runs inside its host's process (FFmpeg's decoder and x264 threads, MLT's): an OpenMP
// team there keeps its threads spinning for a while after every parallel loop, taking cores from
// the host's own threads at every frame (measured in FFmpeg on 16 cores, docs/PERFORMANCE.md:
// 9.0 ms per 1080p frame with OpenMP's default waiting, 4.0 with passive waiting). These threads
// wait on a condition variable instead.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hazefree_frei0r {

class RowTeam {
 public:
  explicit RowTeam(int helpers);
  ~RowTeam();
  RowTeam(const RowTeam&) = delete;
  RowTeam& operator=(const RowTeam&) = delete;

  // Calls body(begin, end) over [0, count) in contiguous parts, one per thread (the caller's
  // included), and returns when every part is done.
  void run(std::ptrdiff_t count, const std::function<void(std::ptrdiff_t, std::ptrdiff_t)>& body);

  // Helpers for the host's cores: half of them (the host decodes and encodes beside), at most 7.
  static int default_helpers();

 private:
  void part(int index, std::ptrdiff_t count) const;
  void serve(int index);

  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable start_;
  std::condition_variable done_;
  const std::function<void(std::ptrdiff_t, std::ptrdiff_t)>* body_ = nullptr;
  std::ptrdiff_t count_ = 0;
  unsigned long generation_ = 0;
  int pending_ = 0;
  bool stopping_ = false;
};

}  // namespace hazefree_frei0r
