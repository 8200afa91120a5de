// `hazefree job plan | analyze | render | join | status | slurm` (SPEC 8), and the one-machine
// form `hazefree --chunks N|auto [--gpus all|0,1,..] INPUT OUTPUT`, which runs the same stages
// in worker threads of one process (jobs/local_runner.cpp).
#pragma once

#include <string>
#include <vector>

#include "jobs/job_options.hpp"
#include "pipeline/options.hpp"

namespace CLI {
class App;
}  // namespace CLI

namespace hazefree::jobs {

// A stage's own command line (DIR and its few options) parsed into `app`'s variables; false
// when it asked for --help (printed on stdout). A bad line throws UsageError, `prefix` before
// CLI11's message.
bool parse_stage_line(CLI::App& app, int argc, char** argv, const std::string& prefix = "");

// `hazefree job ...` (argv[0] is "job"); returns the exit status.
int job_main(int argc, char** argv);

// `hazefree --chunks ...`: plan, then the chunks on this machine's workers, join; returns the exit status.
int run_local_job(const RunOptions& options, const JobOptions& job);

// `job slurm`: writes DIR/slurm/{analyze,render,join}.sbatch and submits them with sbatch
// (render after the analysis, join after the render; each array task requeued on failure of its
// node). `gpus_per_task` > 0 asks each task for that many GPUs (--gres=gpu:N).
void submit_to_slurm(const std::string& dir, int gpus_per_task, const std::vector<std::string>& sbatch_options,
                     bool quiet);

}  // namespace hazefree::jobs
