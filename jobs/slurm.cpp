// `hazefree job slurm DIR`: the job as three Slurm submissions, written as readable batch scripts
// into DIR/slurm/ first: an array of analyses, an array of renders after it (afterok) and the join
// after that (afterok). Array tasks take their index from SLURM_ARRAY_TASK_ID; --requeue lets
// Slurm run a task again when its node fails, which is harmless (every task is idempotent).
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "jobs/job_command.hpp"
#include "jobs/job_files.hpp"
#include "jobs/job_plan.hpp"

namespace hazefree::jobs {
namespace fs = std::filesystem;

namespace {

// Single quotes for the shell.
std::string quoted(const std::string& text) {
  std::string out = "'";
  for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string batch_script(const std::string& name, const std::string& dir, const std::string& exe,
                         const std::string& command, int array_size, int gpus_per_task) {
  std::string s = "#!/bin/sh\n";
  s += fmt::format("# hazefree job {}: written by `hazefree job slurm`; sbatch runs it (see docs/JOBS.md).\n", name);
  s += fmt::format("#SBATCH --job-name=hazefree-{}\n", name);
  if (array_size > 0) s += fmt::format("#SBATCH --array=0-{}\n", array_size - 1);
  s += "#SBATCH --requeue\n";
  s += "#SBATCH --ntasks=1\n";
  if (gpus_per_task > 0) s += fmt::format("#SBATCH --gres=gpu:{}\n", gpus_per_task);
  s += fmt::format("#SBATCH --output={}/logs/slurm-{}-{}.out\n", dir, name, array_size > 0 ? "%a" : "%j");
  s += fmt::format("exec {} job {} {}{}\n", quoted(exe), command, quoted(dir),
                   array_size > 0 ? "  # the task index comes from SLURM_ARRAY_TASK_ID" : "");
  return s;
}

// Runs sbatch --parsable with `arguments`; returns the job id it printed.
std::string sbatch(const std::vector<std::string>& arguments) {
  int out[2];
  if (pipe(out) != 0) throw JobError(fmt::format("sbatch: {}", std::strerror(errno)));
  const pid_t pid = fork();
  if (pid < 0) {
    const int error = errno;
    close(out[0]);
    close(out[1]);
    throw JobError(fmt::format("sbatch: cannot start it ({})", std::strerror(error)));
  }
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    close(out[0]);
    close(out[1]);
    std::vector<char*> argv;
    std::vector<std::string> args{"sbatch", "--parsable"};
    args.insert(args.end(), arguments.begin(), arguments.end());
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execvp("sbatch", argv.data());
    const std::string message = fmt::format("hazefree: sbatch: cannot run it ({}): is Slurm installed and on PATH?\n",
                                            std::strerror(errno));
    (void)!write(STDERR_FILENO, message.data(), message.size());
    _exit(127);
  }
  close(out[1]);
  std::string text;
  char buffer[256];
  for (;;) {
    const ssize_t n = read(out[0], buffer, sizeof buffer);
    if (n > 0) text.append(buffer, static_cast<std::size_t>(n));
    else if (n == 0 || errno != EINTR) break;
  }
  close(out[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw JobError(fmt::format("sbatch {} failed (exit status {})", arguments.back(),
                               WIFEXITED(status) ? WEXITSTATUS(status) : -1));
  // --parsable prints "jobid" or "jobid;cluster".
  const std::string id = text.substr(0, text.find_first_of(";\n"));
  if (id.empty()) throw JobError(fmt::format("sbatch {}: printed no job id", arguments.back()));
  return id;
}

}  // namespace

void submit_to_slurm(const std::string& dir_arg, int gpus_per_task, const std::vector<std::string>& sbatch_options,
                     bool quiet) {
  const std::string dir = fs::absolute(dir_arg).lexically_normal().string();
  const Plan plan = load_plan(dir);
  std::error_code error;
  const std::string exe = fs::read_symlink("/proc/self/exe", error).string();
  if (error) throw JobError("cannot find the hazefree executable (/proc/self/exe)");
  const int tasks = static_cast<int>(plan.tasks.size());
  const std::string slurm_dir = dir + "/slurm";
  fs::create_directories(dir + "/logs", error);
  const std::string analyze_script = slurm_dir + "/analyze.sbatch";
  const std::string render_script = slurm_dir + "/render.sbatch";
  const std::string join_script = slurm_dir + "/join.sbatch";
  write_file_atomically(analyze_script, batch_script("analyze", dir, exe, "analyze", tasks, gpus_per_task));
  write_file_atomically(render_script, batch_script("render", dir, exe, "render", tasks, gpus_per_task));
  write_file_atomically(join_script, batch_script("join", dir, exe, "join", 0, 0));

  nlohmann::json submitted{{"plan", plan.id}};
  std::string after;
  if (plan.analysis) {
    std::vector<std::string> args = sbatch_options;
    args.push_back(analyze_script);
    const std::string id = sbatch(args);
    submitted["analyze"] = id;
    after = id;
  }
  std::vector<std::string> render_args = sbatch_options;
  if (!after.empty()) render_args.push_back("--dependency=afterok:" + after);
  render_args.push_back(render_script);
  const std::string render_id = sbatch(render_args);
  submitted["render"] = render_id;
  std::vector<std::string> join_args = sbatch_options;
  join_args.push_back("--dependency=afterok:" + render_id);
  join_args.push_back(join_script);
  const std::string join_id = sbatch(join_args);
  submitted["join"] = join_id;
  write_file_atomically(slurm_dir + "/submitted.json", submitted.dump(2) + "\n");
  if (!quiet)
    fmt::print(stderr, "hazefree: job {} submitted: {}render array {} ({} tasks), join {}\n", dir,
               plan.analysis ? fmt::format("analyze array {}, ", submitted["analyze"].get<std::string>()) : "",
               render_id, tasks, join_id);
  fmt::print("{}\n", join_id);
}

}  // namespace hazefree::jobs
