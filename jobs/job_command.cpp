#include "jobs/job_command.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstring>

#include "jobs/job_files.hpp"
#include "jobs/job_plan.hpp"
#include "jobs/job_stages.hpp"
#include "io/logging.hpp"
#include "pipeline/pipeline.hpp"

namespace hazefree::jobs {
namespace {

constexpr const char* kJobHelp =
    "hazefree job: one input or many, in chunks of whole frames over GPUs and hosts;\n"
    "every frame identical to the single run's (SPEC 8). The stages, each a command a scheduler can run:\n"
    "  hazefree job plan DIR INPUT OUTPUT [INPUT OUTPUT ...] [--chunks N | --chunk-seconds SECONDS | --chunk-starts F,F,...] [run options]\n"
    "  hazefree job analyze DIR [--chunk K]   per-frame estimates of task K (array task)\n"
    "  hazefree job render DIR [--chunk K]    task K's chunk from its exact start state, encoded (array task)\n"
    "  hazefree job join DIR [--input I]      the chunks and the source's other streams -> each OUTPUT\n"
    "  hazefree job status DIR [--json]       done / running / failed / interrupted / missing per task\n"
    "  hazefree job slurm DIR [--gpus-per-task N] [-- sbatch options]   analyze array -> render array -> join\n"
    "K defaults to SLURM_ARRAY_TASK_ID, else JOB_COMPLETION_INDEX. On one machine, in one process, each\n"
    "frame decoded once: hazefree --chunks N|auto [--gpus all|0,1,...] [--job-memory MIB] INPUT OUTPUT.\n"
    "docs/JOBS.md describes DIR and other schedulers.\n";

int plan_command(int argc, char** argv) {
  RunOptions options;
  std::string exit_message;
  std::vector<std::string> files;
  JobFlags job_flags;
  if (!parse_command_line(argc, argv, options, exit_message, &files,
                          "hazefree job plan DIR INPUT OUTPUT [INPUT OUTPUT ...]: cuts the inputs into chunks at "
                          "any frame (reading packets only) and writes the job into DIR",
                          [&job_flags](CLI::App& app) { job_flags.add_to(app, true); })) {
    fmt::print("{}", exit_message);
    return 0;
  }
  if (options.live) throw UsageError("job plan: --live sources cannot be cut into chunks");
  // Our own line says what failed; FFmpeg's libraries' lines only with -v, as in a single run.
  io::set_ffmpeg_log_level(options.verbose ? io::LogLevel::verbose : io::LogLevel::silent);
  io::show_warnings(!options.quiet);
  const ChunkRequest request = chunk_request(job_flags.options());
  std::vector<std::pair<std::string, std::string>> pairs;
  for (std::size_t i = 1; i + 1 < files.size(); i += 2) pairs.emplace_back(files[i], files[i + 1]);
  const Plan plan = make_plan(pairs, options, request);
  save_plan(files[0], plan);
  if (!options.quiet) {
    std::int64_t frames = 0;
    for (const InputPlan& in : plan.inputs) frames += in.frames;
    fmt::print(stderr, "hazefree: job {}: {}, {} frames in {} (tasks 0-{}){}\n", files[0],
               counted(plan.inputs.size(), "input"), frames,
               counted(plan.tasks.size(), "chunk"), plan.tasks.size() - 1,
               plan.analysis ? ", analysis needed" : ", no analysis (the mode carries no state)");
  }
  return 0;
}

// analyze / render / join / status: DIR and a few options of their own.
int stage_command(const std::string& stage, int argc, char** argv) {
  CLI::App app{fmt::format("hazefree job {}", stage), fmt::format("hazefree job {}", stage)};
  std::string dir;
  int chunk = -1, input = -1, gpus_per_task = 0;
  bool quiet = false, verbose = false, as_json = false;
  std::vector<std::string> sbatch;
  app.add_option("DIR", dir, "the job's directory")->required()->type_name("");
  if (stage == "analyze" || stage == "render")
    app.add_option("--chunk", chunk, "task index (default: SLURM_ARRAY_TASK_ID, else JOB_COMPLETION_INDEX)")
        ->type_name("K");  // the names of the job's help (kJobHelp)
  if (stage == "join") app.add_option("--input", input, "join only this input's output (default: all)")->type_name("I");
  if (stage == "status") app.add_flag("--json", as_json, "as JSON");
  if (stage == "slurm") {
    app.add_option("--gpus-per-task", gpus_per_task, "GPUs per array task, [0, 64] (--gres=gpu:N; default 0)")
        ->type_name("N")
        ->check(CLI::Range(0, 64).description(""));
    app.add_option("SBATCH_OPTIONS", sbatch, "after --: options for every sbatch call (e.g. --partition=gpu)")
        ->type_name("");
  }
  app.add_flag("-q,--quiet", quiet, "only errors on stderr");
  app.add_flag("-v,--verbose", verbose, "more detail on stderr");
  if (!parse_stage_line(app, argc, argv)) return 0;
  StageOptions options{quiet, verbose};
  io::set_ffmpeg_log_level(verbose ? io::LogLevel::verbose : io::LogLevel::silent);
  io::show_warnings(!quiet);
  if (stage == "status") {
    fmt::print("{}", job_status(dir, as_json));
    return 0;
  }
  if (stage == "join") {
    join_outputs(dir, input, options);
    return 0;
  }
  if (stage == "slurm") {
    submit_to_slurm(dir, gpus_per_task, sbatch, quiet);
    return 0;
  }
  const Plan plan = load_plan(dir);
  const int task = task_index(plan, dir, chunk);
  if (stage == "analyze") analyze_task(dir, task, options);
  else render_task(dir, task, options);
  return stop_requested() ? 130 : 0;
}

}  // namespace

bool parse_stage_line(CLI::App& app, int argc, char** argv, const std::string& prefix) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    fmt::print("{}", app.help());
    return false;
  } catch (const CLI::ParseError& e) {
    throw UsageError(prefix + e.what());
  }
  return true;
}

int job_main(int argc, char** argv) {
  const std::string stage = argc >= 2 ? argv[1] : "";
  try {
    if (stage.empty() || stage == "--help" || stage == "-h") {
      fmt::print("{}", kJobHelp);
      return stage.empty() ? 2 : 0;
    }
    if (stage == "plan") return plan_command(argc - 1, argv + 1);
    if (stage == "analyze" || stage == "render" || stage == "join" || stage == "status" || stage == "slurm")
      return stage_command(stage, argc - 1, argv + 1);
    fmt::print(stderr, "hazefree: job {}: unknown stage (plan, analyze, render, join, status, slurm)\n", stage);
    return 2;
  } catch (const UsageError& e) {
    fmt::print(stderr, "hazefree: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "hazefree: {}\n", e.what());
    return stop_requested() ? 130 : 1;
  }
}

}  // namespace hazefree::jobs
