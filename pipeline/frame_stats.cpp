#include "pipeline/frame_stats.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "pipeline/options.hpp"

namespace hazefree {

std::string frame_stats_line(std::int64_t frame, double pts_time, const DehazeStats& stats) {
  if (!stats.valid)
    return fmt::format(R"({{"frame": {}, "pts_time": {:.6f}, "haze_index": null, "omega": null, "atmospheric_light": null}})",
                       frame, pts_time);
  const auto& a = stats.atmospheric_light;
  return fmt::format(R"({{"frame": {}, "pts_time": {:.6f}, "haze_index": {:.6f}, "omega": {:.6f}, "atmospheric_light": [{:.6f}, {:.6f}, {:.6f}]}})",
                     frame, pts_time, stats.haze_index, stats.omega, a[0], a[1], a[2]);
}

FrameStatsFile::FrameStatsFile(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "w");
  if (!file_) throw std::runtime_error(fmt::format("{}: cannot write the frame statistics: {}", path, std::strerror(errno)));
  // Each line as its frame is done: a live run's file can be followed (tail -f), and a run
  // stopped at once keeps whole lines.
  std::setvbuf(file_, nullptr, _IOLBF, 0);
}

FrameStatsFile::~FrameStatsFile() {
  if (file_) std::fclose(file_);
}

void FrameStatsFile::write(std::int64_t frame, double pts_time, const DehazeStats& stats) {
  if (!file_) return;
  const std::string line = frame_stats_line(frame, pts_time, stats) + "\n";
  std::fwrite(line.data(), 1, line.size(), file_);
}

void FrameStatsFile::close() {
  if (!file_) return;
  const bool failed = std::ferror(file_) != 0;
  const int closed = std::fclose(file_);
  file_ = nullptr;
  if (failed || closed != 0) throw std::runtime_error(fmt::format("{}: the frame statistics could not be written", path_));
}

void check_stats_path(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) return;
  const fs::path folder = fs::path(path).parent_path();
  std::error_code ec;
  if (!folder.empty() && !fs::is_directory(folder, ec))
    throw UsageError("stats", fmt::format("--stats {}: folder {} does not exist", path, folder.string()));
  if (fs::is_directory(path, ec)) throw UsageError("stats", fmt::format("--stats {}: is a folder; give a file name", path));
}

}  // namespace hazefree
