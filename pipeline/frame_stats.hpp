// --stats FILE (SPEC 13): one JSON line per frame written, in output order, with DCP's figures of
// the frame: {"frame": n, "pts_time": s, "haze_index": h, "omega": w, "atmospheric_light": [r,
// g, b]} (the last three null outside DCP; s: the frame's time in the output, from 0 after -ss).
// Jobs write one file per chunk and join them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "kernels/processor.hpp"

namespace hazefree {

// One frame's line, without the newline.
std::string frame_stats_line(std::int64_t frame, double pts_time, const DehazeStats& stats);

class FrameStatsFile {
 public:
  // Opens (creates or truncates; with `append`, creates or adds to) `path`, which
  // check_stats_file() allowed before the run, or takes stdout or stderr for "-", "pipe:1" and
  // "pipe:2"; throws std::runtime_error with one line naming the path when it cannot.
  explicit FrameStatsFile(const std::string& path, bool append = false);
  ~FrameStatsFile();
  FrameStatsFile(const FrameStatsFile&) = delete;
  FrameStatsFile& operator=(const FrameStatsFile&) = delete;

  void write(std::int64_t frame, double pts_time, const DehazeStats& stats);
  // Flushes and closes; throws std::runtime_error when the data could not be written.
  void close();

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  bool standard_stream_ = false;  // stdout or stderr: flushed, not closed
};

// Checked when the options are read (UsageError, status 2): a standard stream that --stats may
// name, and not stdout when the video `output` is written there.
void check_stats_path(const std::string& path, const std::string& output);

// Checked before the run opens its input (std::runtime_error naming the path, status 1 as the
// output's own): the folder of a --stats file exists, the path is no folder, not the input's or
// the output's file (it would be truncated under them), and not an existing file without -y.
void check_stats_file(const std::string& path, const std::string& input, const std::string& output, bool overwrite);

}  // namespace hazefree
