// The progress line on stderr (frames, fps, elapsed, ETA when the length is known), shown only
// when stderr is a terminal and not silenced; redrawn at most four times a second.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace hazefree {

// "H:MM:SS" of a duration, rounded to the second.
std::string clock_text(double seconds);

class Progress {
 public:
  Progress(bool quiet, std::int64_t expected_frames);
  void frame_done(std::int64_t frames);  // called by the encoder thread
  void finish();                         // ends the line

 private:
  bool enabled_;
  std::int64_t expected_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  bool drawn_ = false;
};

}  // namespace hazefree
