// FFmpeg's log level while the library runs (hazefree::run()), as the command line sets it.
#pragma once

namespace hazefree::io {

// FFmpeg's level for the runs of the library (hazefree::run()) in a program that did not choose
// it with set_ffmpeg_log_level() (the command line and the service choose it; Python and the
// library's other hosts do not): while any such run goes on, FFmpeg's and the encoders' lines
// are shown as the command line shows them, fatal errors only (no x264 statistics) unless a run
// is `verbose` (-v: informational messages too); the host's own level is back after the last
// run. The run's own one-line error says what failed.
class RunLogLevel {
 public:
  explicit RunLogLevel(bool verbose);
  ~RunLogLevel();
  RunLogLevel(const RunLogLevel&) = delete;
  RunLogLevel& operator=(const RunLogLevel&) = delete;

 private:
  bool counted_ = false;
  bool verbose_ = false;
};

}  // namespace hazefree::io
