// `hazefree --chunks N [--gpus ...] INPUT OUTPUT`: the job's stages on this machine. Each task
// runs as a child process `hazefree job analyze|render DIR --chunk K` (a full pipeline of its own:
// decoder thread, lanes, encoder thread), one worker slot per GPU (CUDA_VISIBLE_DEVICES) or, with
// no GPU, slots sharing the cores (OMP_NUM_THREADS). A render starts as soon as the analyses of
// its input's earlier chunks are done; the join runs here at the end.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "jobs/job_command.hpp"
#include "jobs/job_files.hpp"
#include "jobs/job_plan.hpp"
#include "jobs/job_stages.hpp"
#include "kernels/processor.hpp"
#include "pipeline/pipeline.hpp"

extern char** environ;

namespace hazefree::jobs {
namespace fs = std::filesystem;

namespace {

struct Slot {
  int gpu = -1;        // CUDA device, -1: CPU
  int threads = 0;     // OMP_NUM_THREADS for a CPU slot (0: leave)
  bool analyses = true;  // runs analyze tasks
  bool renders = true;   // runs render tasks
  pid_t pid = 0;       // running child, 0: free
  Stage stage = Stage::analyze;
  int task = -1;
};

std::vector<int> parse_gpus(const std::string& text, int available) {
  std::vector<int> gpus;
  if (text.empty() || text == "all") {
    for (int i = 0; i < available; ++i) gpus.push_back(i);
    return gpus;
  }
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) {
    char* end = nullptr;
    const long g = std::strtol(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || g < 0)
      throw UsageError(fmt::format("--gpus {}: expected all or GPU numbers separated by commas", text));
    if (g >= available)
      throw UsageError(fmt::format("--gpus {}: GPU {} does not exist ({} GPU{} here)", text, g, available,
                                   available == 1 ? "" : "s"));
    gpus.push_back(static_cast<int>(g));
  }
  return gpus;
}

// The GPUs the workers will see, counted without starting CUDA in this process: starting the
// driver takes about a second on a host of four GPUs (measured, docs/SCALING.md), and every
// worker pays its own start anyway. The driver lists its GPUs in /proc/driver/nvidia/gpus;
// CUDA_VISIBLE_DEVICES narrows them. Where that folder is missing, CUDA is asked.
int visible_gpu_count() {
#if defined(HAZEFREE_HAVE_CUDA)
  std::error_code error;
  int listed = 0;
  for (fs::directory_iterator it("/proc/driver/nvidia/gpus", error), end; !error && it != end; it.increment(error))
    ++listed;
  if (error || listed == 0) return cuda_device_count();
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) {
    // CUDA stops at the first entry it cannot use; count the entries up to there.
    int entries = 0;
    std::stringstream ss(visible);
    std::string part;
    while (std::getline(ss, part, ',') && !part.empty()) ++entries;
    return std::min(entries, listed);
  }
  return listed;
#else
  return cuda_device_count();
#endif
}

std::string self_executable() {
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  if (error) throw JobError("cannot find the hazefree executable (/proc/self/exe)");
  return self.string();
}

// Starts `hazefree job STAGE DIR --chunk K -q` with its output appended to the task's log.
pid_t spawn_task(const std::string& exe, const std::string& dir, Stage stage, int task, const Slot& slot, bool verbose) {
  std::vector<std::string> args{exe, "job", to_string(stage), dir, "--chunk", std::to_string(task), "-q"};
  if (verbose) args.back() = "-v";
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    if (entry.rfind("CUDA_VISIBLE_DEVICES=", 0) == 0 || entry.rfind("OMP_NUM_THREADS=", 0) == 0 ||
        entry.rfind("SLURM_ARRAY_TASK_ID=", 0) == 0 || entry.rfind("JOB_COMPLETION_INDEX=", 0) == 0)
      continue;
    env.push_back(entry);
  }
  if (slot.gpu >= 0) env.push_back(fmt::format("CUDA_VISIBLE_DEVICES={}", slot.gpu));
  if (slot.threads > 0) env.push_back(fmt::format("OMP_NUM_THREADS={}", slot.threads));
  std::vector<char*> argv, envp;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  const std::string log = log_path(dir, stage, task);
  std::error_code error;
  fs::create_directories(fs::path(log).parent_path(), error);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  pid_t pid = 0;
  const int result = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (result != 0) throw JobError(fmt::format("{}: cannot start a worker ({})", exe, std::strerror(result)));
  return pid;
}

bool task_done(const std::string& dir, const Plan& plan, Stage stage, int task) {
  const std::optional<TaskState> s = read_task_state(dir, stage, task);
  return s && s->state == "done" && s->plan == plan.id;
}

}  // namespace

int run_local_job(const RunOptions& options) {
  const JobOptions& job = options.job;
  if (options.live) throw UsageError("--chunks: a --live source cannot be cut into chunks");
  // DIR: given, or hidden next to the output (kept until the job succeeds, so that the same
  // command run again after a failure or an interruption resumes it).
  const fs::path output = fs::absolute(options.output);
  const bool own_dir = job.dir.empty();
  const std::string dir = own_dir ? (output.parent_path() / ("." + output.filename().string() + ".hazefree-job")).string()
                                  : fs::absolute(job.dir).string();
  const ChunkRequest request = chunk_request(job);
  const auto started = std::chrono::steady_clock::now();
  const Plan fresh = make_plan({{options.input, options.output}}, options, request);
  std::error_code error;
  bool resumed = false;
  if (fs::exists(plan_path(dir), error)) {
    try {
      resumed = load_plan(dir).id == fresh.id;
    } catch (const JobError&) {
      resumed = false;  // another version or damaged: planned again below
    }
  }
  if (!resumed) save_plan(dir, fresh);
  const Plan plan = load_plan(dir);

  // Worker slots.
  std::vector<Slot> slots;
  const int gpu_count = options.processing.backend != Backend::cpu ? visible_gpu_count() : 0;
  const bool use_gpus = gpu_count > 0;
  if (use_gpus) {
    // Per GPU: the render workers, and one more for the analyses, which are light (a decode and
    // the first DCP steps) and run beside the renders so that renders need not wait for them.
    // (Render workers taking analyses as well, to end the start's wait sooner, was measured
    // slower on a 4-GPU host: the analyses' decoding then takes the cores from the renders.)
    for (const int gpu : parse_gpus(job.gpus, gpu_count)) {
      for (int w = 0; w < job.workers_per_gpu; ++w) slots.push_back(Slot{gpu, 0, false, true});
      if (plan.analysis) slots.push_back(Slot{gpu, 0, true, false});
    }
  } else {
    if (!job.gpus.empty() && job.gpus != "all")
      throw UsageError(fmt::format("--gpus {}: no usable GPU here{}", job.gpus,
                                   options.processing.backend == Backend::cpu ? " (--backend cpu)" : ""));
    const int workers = job.workers > 0 ? job.workers : 2;
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    for (int w = 0; w < workers; ++w) slots.push_back(Slot{-1, std::max(1, cores / workers)});
  }
  const auto workers = std::count_if(slots.begin(), slots.end(), [](const Slot& s) { return s.renders; });
  if (!options.quiet)
    fmt::print(stderr, "hazefree: {} frames in {} chunks on {} worker{} ({}){}; job directory {}\n",
               plan.inputs[0].frames, plan.tasks.size(), workers, workers == 1 ? "" : "s",
               use_gpus ? fmt::format("GPU {}", job.gpus.empty() ? "all" : job.gpus) : "CPU",
               resumed ? ", resuming" : "", dir);

  // The tasks still to run, in array order (longest first).
  std::vector<std::pair<Stage, int>> pending;
  // Analyses in time order: chunk k's unblocks the render of chunk k + 1.
  std::vector<const ChunkPlan*> in_time_order;
  for (const ChunkPlan& c : plan.tasks) in_time_order.push_back(&c);
  std::stable_sort(in_time_order.begin(), in_time_order.end(), [](const ChunkPlan* a, const ChunkPlan* b) {
    return a->input != b->input ? a->input < b->input : a->number < b->number;
  });
  // Which analyses are done: read from DIR once, then kept up to date as workers finish (the
  // scheduler asks for every pending render each time a slot frees).
  std::vector<bool> analysed(plan.tasks.size(), false);
  for (const ChunkPlan* c : in_time_order) {
    if (!plan.analysis || c->to_end) continue;
    analysed[static_cast<std::size_t>(c->task)] = task_done(dir, plan, Stage::analyze, c->task);
    if (!analysed[static_cast<std::size_t>(c->task)]) pending.emplace_back(Stage::analyze, c->task);
  }
  for (const ChunkPlan& c : plan.tasks)
    if (!task_done(dir, plan, Stage::render, c.task)) pending.emplace_back(Stage::render, c.task);
  auto ready = [&](Stage stage, int task) {
    if (stage == Stage::analyze || !plan.analysis) return true;
    const ChunkPlan& c = plan.tasks[static_cast<std::size_t>(task)];
    for (const int earlier : plan.inputs[static_cast<std::size_t>(c.input)].chunks) {
      if (plan.tasks[static_cast<std::size_t>(earlier)].number >= c.number) break;
      if (!analysed[static_cast<std::size_t>(earlier)]) return false;
    }
    return true;
  };

  const std::string exe = self_executable();
  std::string failure;
  std::size_t finished = 0;
  const std::size_t total = pending.size();
  auto running = [&] { return std::count_if(slots.begin(), slots.end(), [](const Slot& s) { return s.pid != 0; }); };
  while ((!pending.empty() && failure.empty() && !stop_requested()) || running() > 0) {
    // Fill the free slots with ready tasks (analyses first: they unblock renders).
    for (Slot& slot : slots) {
      if (slot.pid != 0 || !failure.empty() || stop_requested()) continue;
      const auto next = std::find_if(pending.begin(), pending.end(), [&](const auto& p) {
        return (p.first == Stage::analyze ? slot.analyses : slot.renders) && ready(p.first, p.second);
      });
      if (next == pending.end()) continue;
      slot.stage = next->first;
      slot.task = next->second;
      slot.pid = spawn_task(exe, dir, slot.stage, slot.task, slot, options.verbose);
      pending.erase(next);
    }
    if (running() == 0) {
      if (!pending.empty() && failure.empty() && !stop_requested())
        failure = fmt::format("{}: no task can start (analyses missing)", dir);
      break;
    }
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) {
        // A stop request: the workers finish what they can and stop; the job resumes later.
        if (stop_requested())
          for (const Slot& s : slots)
            if (s.pid) ::kill(s.pid, SIGINT);
        continue;
      }
      throw JobError(fmt::format("waiting for the workers: {}", std::strerror(errno)));
    }
    const auto slot = std::find_if(slots.begin(), slots.end(), [&](const Slot& s) { return s.pid == pid; });
    if (slot == slots.end()) continue;
    slot->pid = 0;
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && task_done(dir, plan, slot->stage, slot->task);
    if (ok) {
      ++finished;
      if (slot->stage == Stage::analyze) analysed[static_cast<std::size_t>(slot->task)] = true;
      if (!options.quiet)
        fmt::print(stderr, "hazefree: {} {} done ({}) [{}/{}]\n", to_string(slot->stage), slot->task,
                   describe_task(plan, slot->task), finished, total);
      continue;
    }
    if (failure.empty() && !stop_requested()) {
      const std::optional<TaskState> s = read_task_state(dir, slot->stage, slot->task);
      const std::string why = s && s->state == "failed" ? s->error
                              : WIFSIGNALED(status)     ? fmt::format("killed by signal {}", WTERMSIG(status))
                                                        : fmt::format("exit status {}", WEXITSTATUS(status));
      failure = fmt::format("{} task {} ({}) failed: {} (log: {})", to_string(slot->stage), slot->task,
                            describe_task(plan, slot->task), why, log_path(dir, slot->stage, slot->task));
      for (const Slot& s : slots)
        if (s.pid) ::kill(s.pid, SIGTERM);
    }
  }
  if (stop_requested()) {
    fmt::print(stderr, "hazefree: interrupted; the finished chunks are kept in {}: the same command resumes the job\n", dir);
    return 130;
  }
  if (!failure.empty()) throw JobError(failure);

  join_outputs(dir, -1, StageOptions{true, options.verbose});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!options.quiet)
    fmt::print(stderr, "hazefree: {} frames in {:.2f} s ({:.1f} fps), {} chunks on {} worker{}, {}\n", plan.inputs[0].frames,
               seconds, plan.inputs[0].frames / std::max(seconds, 1e-9), plan.tasks.size(), workers,
               workers == 1 ? "" : "s", to_string(options.processing.mode));
  if (own_dir) fs::remove_all(dir, error);
  return 0;
}

}  // namespace hazefree::jobs
