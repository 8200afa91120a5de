#include "jobs/job_files.hpp"

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "jobs/job_plan.hpp"

namespace hazefree::jobs {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string timestamp() {
  const std::time_t t = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &utc);
  return text;
}

}  // namespace

const char* to_string(Stage stage) {
  switch (stage) {
    case Stage::analyze: return "analyze";
    case Stage::render: return "render";
    case Stage::join: return "join";
  }
  return "?";
}

const char* to_string(TaskStatus status) {
  switch (status) {
    case TaskStatus::running: return "running";
    case TaskStatus::failed: return "failed";
    case TaskStatus::interrupted: return "interrupted";
    case TaskStatus::done: return "done";
  }
  return "?";
}

std::string plan_path(const std::string& dir) { return dir + "/plan.json"; }
std::string analysis_path(const std::string& dir, int task) { return fmt::format("{}/analysis/task-{}.bin", dir, task); }
std::string chunk_path(const std::string& dir, int task) { return fmt::format("{}/chunks/task-{}.mov", dir, task); }
std::string chunk_stats_path(const std::string& dir, int task) {
  return fmt::format("{}/chunks/task-{}.stats.jsonl", dir, task);
}
std::string state_path(const std::string& dir, Stage stage, int index) {
  return fmt::format("{}/state/{}-{}.json", dir, to_string(stage), index);
}
std::string log_path(const std::string& dir, Stage stage, int index) {
  return fmt::format("{}/logs/{}-{}.log", dir, to_string(stage), index);
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

void write_file_atomically(const std::string& path, const std::string& content) {
  const fs::path target(path);
  std::error_code error;
  fs::create_directories(target.parent_path(), error);
  const fs::path temporary = target.parent_path() / fmt::format(".{}.{}-{}", target.filename().string(), host_name(), ::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << content;
    out.flush();
    if (!out) throw JobError(fmt::format("{}: cannot write ({})", temporary.string(), std::strerror(errno)));
  }
  fs::rename(temporary, target, error);
  if (error) {
    fs::remove(temporary, error);
    throw JobError(fmt::format("{}: cannot move into place", path));
  }
}

namespace {
constexpr TaskStatus kStatuses[] = {TaskStatus::running, TaskStatus::failed, TaskStatus::interrupted,
                                    TaskStatus::done};
}  // namespace

std::optional<TaskState> read_task_state(const std::string& dir, Stage stage, int index) {
  std::ifstream file(state_path(dir, stage, index));
  if (!file) return std::nullopt;
  try {
    const json j = json::parse(file);
    TaskState s;
    const std::string word = j.at("state").get<std::string>();
    const auto known = std::find_if(std::begin(kStatuses), std::end(kStatuses),
                                    [&](TaskStatus status) { return word == to_string(status); });
    if (known == std::end(kStatuses)) return std::nullopt;
    s.state = *known;
    s.plan = j.value("plan", std::string());
    s.host = j.value("host", std::string());
    s.pid = j.value("pid", 0L);
    s.error = j.value("error", std::string());
    s.frames = j.value("frames", std::int64_t{0});
    s.seconds = j.value("seconds", 0.0);
    s.decoded = j.value("decoded", std::string());
    return s;
  } catch (const json::exception&) {
    return std::nullopt;  // written by rename: a damaged file was not written by a task
  }
}

void write_task_state(const std::string& dir, Stage stage, int index, const TaskState& s) {
  json j{{"state", to_string(s.state)}, {"plan", s.plan}, {"host", s.host}, {"pid", s.pid}, {"time", timestamp()}};
  if (!s.error.empty()) j["error"] = s.error;
  // A running render's frames written so far (TaskRun::progress), which `job status` counts.
  if (s.state == TaskStatus::running && s.frames > 0) j["frames"] = s.frames;
  if (s.state == TaskStatus::done) {
    j["frames"] = s.frames;
    j["seconds"] = s.seconds;
    if (!s.decoded.empty()) j["decoded"] = s.decoded;
  }
  write_file_atomically(state_path(dir, stage, index), j.dump() + "\n");
}

bool done_for_plan(const std::optional<TaskState>& state, const std::string& plan_id) {
  return state && state->state == TaskStatus::done && state->plan == plan_id;
}

bool task_done(const std::string& dir, const std::string& plan_id, Stage stage, int index) {
  return done_for_plan(read_task_state(dir, stage, index), plan_id);
}

TaskRun::TaskRun(std::string dir, Stage stage, int index, std::string plan_id, bool quiet)
    : dir_(std::move(dir)), stage_(stage), index_(index), plan_id_(std::move(plan_id)), quiet_(quiet), start_(now_seconds()) {
  const TaskState s = state(TaskStatus::running);
  write_task_state(dir_, stage_, index_, s);
  line(fmt::format("{} {} started on {} (pid {})", to_string(stage_), index_, s.host, s.pid));
}

TaskState TaskRun::state(TaskStatus status) const {
  TaskState s;
  s.state = status;
  s.plan = plan_id_;
  s.host = host_name();
  s.pid = ::getpid();
  return s;
}

void TaskRun::line(const std::string& text) {
  if (!quiet_) fmt::print(stderr, "hazefree: {}\n", text);
  std::error_code error;
  fs::create_directories(fs::path(log_path(dir_, stage_, index_)).parent_path(), error);
  std::ofstream log(log_path(dir_, stage_, index_), std::ios::app);
  log << timestamp() << "  " << text << '\n';
}

void TaskRun::done(std::int64_t frames) {
  TaskState s = state(TaskStatus::done);
  s.frames = frames;
  s.seconds = now_seconds() - start_;
  s.decoded = decoded_;
  write_task_state(dir_, stage_, index_, s);
  line(fmt::format("{} {} done: {} frames in {:.2f} s", to_string(stage_), index_, frames, s.seconds));
}

void TaskRun::progress(std::int64_t frames) {
  const double now = now_seconds();
  if (now - last_progress_ < 2.0) return;
  last_progress_ = now;
  TaskState s = state(TaskStatus::running);
  s.frames = frames;
  s.seconds = now - start_;
  try {
    write_task_state(dir_, stage_, index_, s);
  } catch (const std::exception&) {  // a progress note lost is no failure of the task
  }
}

void TaskRun::failed(const std::string& error) { ended(TaskStatus::failed, error); }
void TaskRun::interrupted(const std::string& error) { ended(TaskStatus::interrupted, error); }

void TaskRun::ended(TaskStatus status, const std::string& error) {
  TaskState s = state(status);
  s.error = error;
  try {
    write_task_state(dir_, stage_, index_, s);
  } catch (const std::exception&) {
  }
  // The error line itself goes to stderr from the command; the log keeps it too.
  std::ofstream log(log_path(dir_, stage_, index_), std::ios::app);
  log << timestamp() << "  " << to_string(status) << ": " << error << '\n';
}

}  // namespace hazefree::jobs
