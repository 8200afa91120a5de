// A run's progress, as ffmpeg shows it: the stats line on stderr ("frame=  120/300 fps= 45
// time=00:00:04.80 speed=1.81x elapsed=0:00:03 eta=0:00:04"), redrawn in place on a terminal and
// printed as a line every few seconds into a log or a pipe; and ffmpeg's -progress report, blocks
// of key=value lines ending in progress=continue (progress=end for the last) written to a pipe or
// a file for scripts. A job's line (jobs/job_progress.cpp) is the same text with its chunks.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace hazefree {

// "H:MM:SS" of a duration, rounded to the second.
std::string clock_text(double seconds);

struct ProgressOptions {
  enum class Line { automatic, on, off };
  Line line = Line::automatic;  // -stats: on (even with -q), -nostats: off; automatic: unless -q
  double period_seconds = 0.0;  // -stats_period; 0: 0.5 s on a terminal and for -progress, 5 s in a log
  std::string url;              // -progress: pipe:1, pipe:2 (pipe: is pipe:1, - too), file:PATH or a path
};

// The standard stream an output option such as -progress or --stats names ("-", "pipe:" and
// "pipe:1" give 1, "pipe:2" gives 2), or -1 for a file path; throws std::invalid_argument with
// one line naming OPTION for a URL it cannot write (another protocol, pipe:7).
int standard_stream_of(const std::string& option, const std::string& url);

// The figures of a progress line; a negative value is unknown and left out.
struct ProgressFigures {
  std::int64_t frames = 0;
  std::int64_t frames_total = 0;  // 0: unknown (no eta)
  double fps = 0.0;
  double out_seconds = -1.0;      // the output's time reached
  double speed = -1.0;            // output seconds per second of run
  double elapsed_seconds = 0.0;
};

// "frame=  120/300 fps= 45 time=00:00:04.80 speed=1.81x elapsed=0:00:03 eta=0:00:04"; the
// fields known only, "eta=?" while the rate is not.
std::string progress_text(const ProgressFigures& figures);

class Progress {
 public:
  // `frame_rate` gives the output time of a frame count (0: unknown, time= and speed= left out).
  // Opens the -progress URL; throws std::runtime_error naming it when it cannot.
  Progress(const ProgressOptions& options, bool quiet, std::int64_t expected_frames, double frame_rate);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  void frame_done(std::int64_t frames);  // called by the encoder thread
  void finish();                         // the last line (ends a redrawn one) and progress=end

 private:
  ProgressFigures figures(std::int64_t frames, std::chrono::steady_clock::time_point now) const;
  void report(const ProgressFigures& f, bool last);

  bool line_enabled_;
  bool on_terminal_;
  std::chrono::duration<double> line_period_;
  std::chrono::duration<double> report_period_;
  int report_fd_ = -1;
  bool report_owned_ = false;
  std::int64_t expected_;
  double frame_rate_;
  std::int64_t frames_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_line_;
  std::chrono::steady_clock::time_point last_report_;
  bool drawn_ = false;
  bool finished_ = false;
};

}  // namespace hazefree
