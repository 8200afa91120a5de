#include "jobs/worker_link.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "jobs/job_plan.hpp"

extern char** environ;

namespace hazefree::jobs {

WorkerLink::WorkerLink(int fd) : fd_(fd) {}

WorkerLink::~WorkerLink() {
  if (fd_ >= 0) close(fd_);
}

bool WorkerLink::send(const std::string& line) {
  std::string text = line;
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  text += '\n';
  std::lock_guard lock(send_mutex_);
  std::size_t sent = 0;
  while (sent < text.size()) {
    const ssize_t n = ::send(fd_, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

std::optional<std::string> WorkerLink::receive(int wake_fd) {
  for (;;) {
    const std::size_t end = buffer_.find('\n');
    if (end != std::string::npos) {
      std::string line = buffer_.substr(0, end);
      buffer_.erase(0, end + 1);
      return line;
    }
    pollfd ready[2] = {{fd_, POLLIN, 0}, {wake_fd, POLLIN, 0}};
    if (poll(ready, wake_fd >= 0 ? 2 : 1, -1) < 0) {
      if (errno == EINTR) continue;
      return std::nullopt;
    }
    if (wake_fd >= 0 && (ready[1].revents & (POLLIN | POLLHUP))) return std::nullopt;
    if (!(ready[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    char bytes[4096];
    const ssize_t n = read(fd_, bytes, sizeof bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    buffer_.append(bytes, static_cast<std::size_t>(n));
  }
}

WorkerProcess start_worker_process(const std::vector<std::string>& arguments) {
  int ends[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0)
    throw JobError(fmt::format("cannot start a worker process: socketpair: {}", std::strerror(errno)));
  // The worker's end above the descriptors it is given: dup2 to 3 then clears close-on-exec.
  const int theirs = fcntl(ends[1], F_DUPFD_CLOEXEC, 10);
  close(ends[1]);
  if (theirs < 0) {
    close(ends[0]);
    throw JobError(fmt::format("cannot start a worker process: {}", std::strerror(errno)));
  }
  std::vector<std::string> words = {"hazefree", "job", "work"};
  words.insert(words.end(), arguments.begin(), arguments.end());
  words.insert(words.end(), {"--link-fd", "3"});
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, theirs, 3);
  pid_t pid = -1;
  const int error = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(theirs);
  if (error != 0) {
    close(ends[0]);
    throw JobError(fmt::format("cannot start a worker process: {}", std::strerror(error)));
  }
  WorkerProcess process;
  process.pid = pid;
  process.link = std::make_unique<WorkerLink>(ends[0]);
  return process;
}

std::string describe_exit(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("ended by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  return fmt::format("ended ({})", status);
}

std::pair<std::string, std::string> split_message(const std::string& line) {
  const std::size_t space = line.find(' ');
  if (space == std::string::npos) return {line, ""};
  return {line.substr(0, space), line.substr(space + 1)};
}

}  // namespace hazefree::jobs
