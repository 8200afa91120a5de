#include "jobs/render_priority.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace hazefree::jobs {
namespace {

constexpr char kPrefix[] = "hf-render-";

// The task a thread's name stands for, or -1.
int task_of(const std::string& name) {
  const std::string prefix = kPrefix;
  if (name.compare(0, prefix.size(), prefix) != 0 || name.size() == prefix.size()) return -1;
  char* end = nullptr;
  const long task = std::strtol(name.c_str() + prefix.size(), &end, 10);
  return *end == '\0' && task >= 0 ? static_cast<int>(task) : -1;
}

// Calls `visit(tid, task)` for every thread of this process named for a render.
template <typename Visit>
void each_render_thread(Visit visit) {
  std::error_code error;
  for (std::filesystem::directory_iterator it("/proc/self/task", error), end; !error && it != end; it.increment(error)) {
    std::ifstream comm(it->path() / "comm");
    std::string name;
    if (!std::getline(comm, name)) continue;  // ended meanwhile
    const int task = task_of(name);
    if (task < 0) continue;
    const long tid = std::strtol(it->path().filename().c_str(), nullptr, 10);
    if (tid > 0) visit(static_cast<id_t>(tid), task);
  }
}

}  // namespace

std::string render_thread_name(int task) { return fmt::format("{}{}", kPrefix, task); }

std::map<int, int> balanced_nice(const std::map<int, std::int64_t>& frames_left, int most) {
  std::map<int, int> nice;
  std::int64_t largest = 0;
  int left = 0;
  for (const auto& [task, frames] : frames_left) {
    largest = std::max(largest, frames);
    if (frames > 0) ++left;
  }
  if (left < 2) return nice;
  for (const auto& [task, frames] : frames_left) {
    const double behind = static_cast<double>(largest - std::max<std::int64_t>(frames, 0)) / static_cast<double>(largest);
    nice[task] = std::clamp(static_cast<int>(std::lround(10.0 * behind)), 0, most);
  }
  return nice;
}

int apply_render_nice(const std::map<int, int>& nice, int floor) {
  int needed = floor;
  each_render_thread([&](id_t tid, int task) {
    const auto wanted = nice.find(task);
    if (wanted == nice.end()) return;
    const int value = std::min(19, floor + wanted->second);
    errno = 0;
    const int now = getpriority(PRIO_PROCESS, tid);
    if (errno != 0 || now == value) return;
    // Lowering a nice value needs CAP_SYS_NICE (or RLIMIT_NICE): the renders' values are raised
    // together instead, from the next call on.
    if (setpriority(PRIO_PROCESS, tid, value) != 0 && (errno == EACCES || errno == EPERM) && now > value)
      needed = std::max(needed, std::min(19, floor + (now - value)));
  });
  return needed;
}

}  // namespace hazefree::jobs
