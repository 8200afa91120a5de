// The job flags of the command line (SPEC 8): how the input is cut into chunks (--chunks,
// --chunk-seconds, --chunk-starts; also those of `job plan`) and, for the run in one process, the
// workers of this machine (--gpus, --workers-per-gpu, --workers, --job-memory, --job-dir). They
// are command-line options, not configuration keys: a job's settings are the run's keys.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}  // namespace CLI

namespace hazefree::jobs {

// A run in chunks on this machine.
struct JobOptions {
  int chunks = 0;                // about this many chunks (0: not a job)
  bool auto_chunks = false;      // --chunks auto: chunks, workers and encoder threads from this host
  double chunk_seconds = 0.0;    // or chunks of about this length
  std::string chunk_starts;      // or chunks starting at these frames, "0,240,480"
  std::string gpus;              // "all" (empty: all) or "0,1,..."
  int workers_per_gpu = 0;       // 0: 1, or as --chunks auto chooses
  int workers = 0;               // without GPUs: workers sharing the cores (0: 2, or as auto chooses)
  // Decoded frames a job's workers may hold in memory at once, in MiB (0: half of the memory
  // available when the job starts): a chunk whose frames fit its worker's share is decoded once
  // for its analysis and its render; a larger one is decoded twice (the two-pass form).
  double memory_mb = 0.0;
  std::string dir;               // the job directory (empty: hidden, next to the output)
  bool active() const { return chunks > 0 || auto_chunks || chunk_seconds > 0 || !chunk_starts.empty(); }
};

// The items of a list separated by commas, as written: "0,240" -> {"0", "240"}, "" -> none; an
// empty item stays ("0,,2", "0,"), for the caller to refuse or to stop at.
std::vector<std::string> comma_list(const std::string& text);

// The flags on a CLI11 app, read back once the command line is parsed. CLI11 keeps pointers to
// the values: a JobFlags stays where it is while its app lives.
class JobFlags {
 public:
  // `plan`: the flags of `job plan` (the cut only; --chunks auto is refused there).
  void add_to(CLI::App& app, bool plan);
  // The options given; throws UsageError for a malformed --chunks, two ways of cutting at once,
  // or a worker flag without a cut.
  JobOptions options() const;

 private:
  JobOptions job_;
  std::string chunks_text_;
  bool plan_ = false;
};

}  // namespace hazefree::jobs
