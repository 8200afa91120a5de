#include "jobs/job_options.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "pipeline/options.hpp"

namespace hazefree::jobs {

std::vector<std::string> comma_list(const std::string& text) {
  std::vector<std::string> items;
  if (text.empty()) return items;
  for (std::size_t start = 0;;) {
    const std::size_t comma = text.find(',', start);
    items.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return items;
    start = comma + 1;
  }
}

void JobFlags::add_to(CLI::App& app, bool plan) {
  plan_ = plan;
  app.add_option("--chunks", chunks_text_, "split the input into N chunks (at any frame), run in parallel with "
                                           "frames identical to one run (see `hazefree job --help`); auto: as many "
                                           "chunks, workers and encoder threads as this machine runs fastest")
      ->type_name(plan ? "N" : "N|auto");  // job plan refuses auto (options())
  // Each value named in --help by what it takes, as the job's help names it (kJobHelp); the bounds
  // are said in the description (a validator's description would be appended to the name:
  // "SECONDS:(0, inf)").
  app.add_option("--chunk-seconds", job_.chunk_seconds, "or chunks of about this many seconds (above 0)")
      ->type_name("SECONDS")
      ->check(bounds_check(Bounds::above(0)).description(""));
  app.add_option("--chunk-starts", job_.chunk_starts, "or chunks starting exactly at these frames (any frame), e.g. 0,240,480")
      ->type_name("F,F,...");
  if (plan) return;
  app.add_option("--gpus", job_.gpus, "with --chunks: the GPUs whose workers run the chunks: all (default) or 0,1,...")
      ->type_name("all|0,1,...");
  app.add_option("--workers-per-gpu", job_.workers_per_gpu,
                 "with --chunks: workers on each GPU, [1, 64] (default 1; auto chooses)")
      ->type_name("N")
      ->check(CLI::Range(1, 64).description(""));
  app.add_option("--workers", job_.workers, "with --chunks and no GPU: workers sharing the cores, [1, 1024] (default 2)")
      ->type_name("N")
      ->check(CLI::Range(1, 1024).description(""));
  app.add_option("--job-memory", job_.memory_mb, "with --chunks: MiB of decoded frames the workers may hold so that "
                                                 "each frame is decoded once (default: half the available memory)")
      ->type_name("MIB")
      ->check(bounds_check(Bounds::at_least(0)).description(""));
  app.add_option("--job-dir", job_.dir, "with --chunks: keep the job's plan, chunks and logs in this directory "
                                        "(default: a hidden one next to OUTPUT, removed when the job succeeds)")
      ->type_name("DIR");
}

JobOptions JobFlags::options() const {
  JobOptions job = job_;
  if (chunks_text_ == "auto") {
    if (plan_)
      throw UsageError("job plan: --chunks auto chooses for this machine's workers; give --chunks N or --chunk-seconds SECONDS");
    job.auto_chunks = true;
  } else if (!chunks_text_.empty()) {
    char* end = nullptr;
    const long n = std::strtol(chunks_text_.c_str(), &end, 10);
    if (*end != '\0' || n < 1 || n > 100000)
      throw UsageError(fmt::format("--chunks {}: expected a number of chunks from 1 to 100000, or auto", chunks_text_));
    job.chunks = static_cast<int>(n);
  }
  const int cut_ways = (job.chunks > 0 || job.auto_chunks) + (job.chunk_seconds > 0) + !job.chunk_starts.empty();
  if (cut_ways > 1) throw UsageError("--chunks, --chunk-seconds and --chunk-starts: give one of them");
  if (!plan_ && cut_ways == 0) {
    // A job's options without a job: refused, each by its own name, rather than ignored.
    std::vector<std::string> given;
    if (!job.gpus.empty()) given.emplace_back("--gpus");
    if (job.workers_per_gpu > 0) given.emplace_back("--workers-per-gpu");
    if (job.workers > 0) given.emplace_back("--workers");
    if (job.memory_mb > 0) given.emplace_back("--job-memory");
    if (!job.dir.empty()) given.emplace_back("--job-dir");
    if (!given.empty())
      throw UsageError(fmt::format("{} {} with --chunks, --chunk-seconds or --chunk-starts (a job in chunks)",
                                   fmt::join(given, ", "), given.size() == 1 ? "goes" : "go"));
  }
  return job;
}

}  // namespace hazefree::jobs
