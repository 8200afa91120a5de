#include "jobs/job_progress.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "pipeline/progress.hpp"

namespace hazefree::jobs {

std::string progress_line(const JobProgress& p) {
  const double percent = p.frames_total > 0 ? 100.0 * static_cast<double>(p.frames_done) / p.frames_total : 0.0;
  const std::int64_t left = std::max<std::int64_t>(0, p.frames_total - p.frames_done);
  const std::string eta = left == 0 ? clock_text(0) : p.fps > 0 ? clock_text(left / p.fps) : "?";
  return fmt::format("frames {}/{} ({:.0f}%), {:.1f} fps, elapsed {}, eta {}; chunks {} running, {} done, {} failed of {}",
                     p.frames_done, p.frames_total, percent, p.fps, clock_text(p.elapsed_seconds), eta, p.running,
                     p.done, p.failed, p.chunks);
}

}  // namespace hazefree::jobs
