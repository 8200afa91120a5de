#include "jobs/job_progress.hpp"

#include <fmt/format.h>

#include "pipeline/progress.hpp"

namespace hazefree::jobs {

std::string progress_line(const JobProgress& p) {
  ProgressFigures figures;  // the single run's line (pipeline/progress.hpp), then the chunks
  figures.frames = p.frames_done;
  figures.frames_total = p.frames_total;
  figures.fps = p.fps;
  figures.elapsed_seconds = p.elapsed_seconds;
  return fmt::format("{}; chunks {} running, {} done, {} failed of {}", progress_text(figures), p.running, p.done,
                     p.failed, p.chunks);
}

}  // namespace hazefree::jobs
