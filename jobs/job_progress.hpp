// A job's progress in one line: frames done of the total, the rate, the time spent and left, and
// the chunks running, done and failed. The run on this machine redraws it in place on a terminal
// (or prints it every few seconds without one); `job status` prints it once from DIR.
#pragma once

#include <cstdint>
#include <string>

namespace hazefree::jobs {

struct JobProgress {
  std::int64_t frames_done = 0;
  std::int64_t frames_total = 0;
  double fps = 0.0;          // frames per second of this run (0: not known yet)
  double elapsed_seconds = 0.0;
  int chunks = 0;
  int running = 0;
  int done = 0;
  int failed = 0;
};

// "frame=  120/300 fps= 45 elapsed=0:00:03 eta=0:00:04; chunks 2 running, 1 done, 0 failed of 5"
// (a single run's line, pipeline/progress.hpp); the time left is "eta=?" until a rate is known.
std::string progress_line(const JobProgress& progress);

}  // namespace hazefree::jobs
