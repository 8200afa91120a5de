#include "pipeline/frame_stats.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "io/media_writer.hpp"
#include "io/url.hpp"
#include "pipeline/options.hpp"
#include "pipeline/progress.hpp"

namespace hazefree {

std::string frame_stats_line(std::int64_t frame, double pts_time, const DehazeStats& stats) {
  if (!stats.valid)
    return fmt::format(R"({{"frame": {}, "pts_time": {:.6f}, "haze_index": null, "omega": null, "atmospheric_light": null}})",
                       frame, pts_time);
  const auto& a = stats.atmospheric_light;
  return fmt::format(R"({{"frame": {}, "pts_time": {:.6f}, "haze_index": {:.6f}, "omega": {:.6f}, "atmospheric_light": [{:.6f}, {:.6f}, {:.6f}]}})",
                     frame, pts_time, stats.haze_index, stats.omega, a[0], a[1], a[2]);
}

namespace {

// The file a --stats path names: "file:" taken off.
std::string without_file_scheme(const std::string& path) {
  return path.rfind("file:", 0) == 0 ? path.substr(5) : path;
}

}  // namespace

FrameStatsFile::FrameStatsFile(const std::string& path, bool append) : path_(path) {
  const int stream = standard_stream_of("--stats", path);  // checked before the run: no throw here
  standard_stream_ = stream > 0;
  if (standard_stream_) {
    file_ = stream == 1 ? stdout : stderr;
    return;
  }
  file_ = std::fopen(without_file_scheme(path).c_str(), append ? "a" : "w");
  if (!file_) throw std::runtime_error(fmt::format("{}: cannot write the frame statistics: {}", path, std::strerror(errno)));
  // Each line as its frame is done: a live run's file can be followed (tail -f), and a run
  // stopped at once keeps whole lines.
  std::setvbuf(file_, nullptr, _IOLBF, 0);
}

FrameStatsFile::~FrameStatsFile() {
  if (file_ && !standard_stream_) std::fclose(file_);
}

void FrameStatsFile::write(std::int64_t frame, double pts_time, const DehazeStats& stats) {
  if (!file_) return;
  const std::string line = frame_stats_line(frame, pts_time, stats) + "\n";
  errno = 0;
  const bool written = std::fwrite(line.data(), 1, line.size(), file_) == line.size() && std::fflush(file_) == 0;
  // A full disk or a file that takes nothing: said at the first line lost, not after the run
  // (stdout or stderr closed by its reader is no failure: see close()).
  if (!written && !standard_stream_) {
    const int error = errno;
    std::fclose(file_);
    file_ = nullptr;
    throw std::runtime_error(fmt::format("--stats {}: the frame statistics could not be written: {}", path_,
                                         error ? std::strerror(error) : "write failed"));
  }
}

void FrameStatsFile::close() {
  if (!file_) return;
  const bool failed = std::ferror(file_) != 0;
  const int closed = standard_stream_ ? std::fflush(file_) : std::fclose(file_);
  file_ = nullptr;
  // stdout or stderr closed by its reader (`--stats - | head -1`): what it wanted is read, the run
  // is no failure (as -progress pipe:1).
  if ((failed || closed != 0) && !standard_stream_)
    throw std::runtime_error(fmt::format("--stats {}: the frame statistics could not be written: {}", path_,
                                         errno ? std::strerror(errno) : "write failed"));
}

void check_stats_path(const std::string& path, const std::string& output) {
  if (path.empty()) return;
  int stream = -1;
  try {
    stream = standard_stream_of("--stats", path);
  } catch (const std::invalid_argument& e) {
    throw UsageError("stats", e.what());
  }
  if (stream == 1 && (output == "-" || output == "pipe:" || output == "pipe:1"))
    throw UsageError("stats", fmt::format("--stats {}: the output is written to stdout; give pipe:2 or a file", path));
}

void check_stats_file(const std::string& path, const std::string& input, const std::string& output, bool overwrite) {
  namespace fs = std::filesystem;
  if (path.empty() || standard_stream_of("--stats", path) > 0) return;
  const std::string file = without_file_scheme(path);
  const auto refuse = [&path](const std::string& why) {
    throw std::runtime_error(fmt::format("--stats {}: {}", path, why));
  };
  const fs::path folder = fs::path(file).parent_path();
  std::error_code ec;
  // Missing, or not a folder (clear.mp4/x.jsonl where clear.mp4 is a file), as for the output.
  if (!folder.empty())
    if (const std::string why = io::folder_problem(folder.string()); !why.empty()) refuse(why);
  if (fs::is_directory(file, ec)) refuse("is a folder; give a file name");
  if (io::same_local_file(file, input)) refuse("is the input file; choose another file for the statistics");
  if (io::same_local_file(file, output)) refuse("is the output file; choose another file for the statistics");
  if (!overwrite && fs::is_regular_file(file, ec)) refuse("already exists (use -y to overwrite)");
}

}  // namespace hazefree
