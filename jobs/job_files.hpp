// The layout of a job directory (SPEC 8), the only storage a job's tasks share (NFS across hosts):
//
//   DIR/plan.json             the plan (jobs/job_plan.hpp); DIR/settings.toml its settings as a preset
//   DIR/analysis/task-K.bin   per-frame estimates of task K (modes that carry state from frame to frame)
//   DIR/chunks/task-K.mov     task K's encoded chunk (video only, the source's timestamps)
//   DIR/state/STAGE-K.json    the last run of a task: running (host, pid), failed (its error line) or
//                             done (with the plan's id: results of another plan are stale)
//   DIR/logs/STAGE-K.log      each run of a task appends its lines here (a failed task's log)
//   DIR/slurm/*.sbatch        the batch scripts `job slurm` submitted
//
// Every file is written under a temporary name in its folder and renamed into place, so a task
// killed at any moment leaves either the old result or the new one, and a task run twice (a
// requeue, a second worker) only replaces its own result with an identical one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace hazefree::jobs {

enum class Stage { analyze, render, join };
const char* to_string(Stage stage);

std::string plan_path(const std::string& dir);
std::string analysis_path(const std::string& dir, int task);
std::string chunk_path(const std::string& dir, int task);
// A chunk's --stats lines (pipeline/frame_stats.hpp), beside its file.
std::string chunk_stats_path(const std::string& dir, int task);
std::string state_path(const std::string& dir, Stage stage, int index);
std::string log_path(const std::string& dir, Stage stage, int index);

// Writes `content` to `path` through a temporary file in the same folder (created if missing).
void write_file_atomically(const std::string& path, const std::string& content);

// What the last run of a task recorded: started and not finished (or still going), ended with
// an error, or finished.
// interrupted: stopped by a stop request (Ctrl-C, SIGTERM, another task's failure), not by an error
// of its own.
enum class TaskStatus { running, failed, interrupted, done };
const char* to_string(TaskStatus status);

struct TaskState {
  TaskStatus state = TaskStatus::running;
  std::string plan;      // the plan id the task ran for
  std::string host;
  long pid = 0;
  std::string error;     // failed, interrupted: the one-line error
  std::int64_t frames = 0;
  double seconds = 0.0;  // done: how long the task took
  // Where the task decoded its frames: "cpu" or "nvdec"; for an analysis, "fused" when it took
  // them from its render's decoding (no decoding of its own); empty when it decoded none.
  std::string decoded;
};

// A state file that is missing, damaged or names no known status reads as none.
std::optional<TaskState> read_task_state(const std::string& dir, Stage stage, int index);
void write_task_state(const std::string& dir, Stage stage, int index, const TaskState& state);

// True when `state` is a finished run for the plan `plan_id` (a result of another plan is stale).
bool done_for_plan(const std::optional<TaskState>& state, const std::string& plan_id);
// The same from DIR's state file of the task.
bool task_done(const std::string& dir, const std::string& plan_id, Stage stage, int index);

// This host's name, for the state files.
std::string host_name();

// One run of a task: its lines go to stderr and to its log in DIR; it records running at the
// start, then done, failed or interrupted.
class TaskRun {
 public:
  TaskRun(std::string dir, Stage stage, int index, std::string plan_id, bool quiet);
  void line(const std::string& text);  // stderr (unless quiet) and the log
  void done(std::int64_t frames);
  void failed(const std::string& error);
  void interrupted(const std::string& error);
  // Frames encoded so far, into the running state (for `job status`), every two seconds at most.
  void progress(std::int64_t frames);
  void set_decoded(std::string where) { decoded_ = std::move(where); }  // recorded with done()

 private:
  TaskState state(TaskStatus status) const;  // this run's state
  void ended(TaskStatus status, const std::string& error);  // failed or interrupted
  std::string dir_;
  Stage stage_;
  int index_;
  std::string plan_id_;
  bool quiet_;
  double start_;
  double last_progress_ = 0.0;
  std::string decoded_;
};

}  // namespace hazefree::jobs
