// The connection between a job's main process and its worker processes (`--processes N`,
// jobs/local_runner.cpp): text lines over a Unix socket, each a word and its argument
// ("next", "task 3", "published 3", "abort TEXT"), and the start of a worker process.
#pragma once

#include <sys/types.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace hazefree::jobs {

class WorkerLink {
 public:
  explicit WorkerLink(int fd);  // takes the descriptor
  ~WorkerLink();
  WorkerLink(const WorkerLink&) = delete;
  WorkerLink& operator=(const WorkerLink&) = delete;

  // One line (newlines inside `line` become spaces); false when the other end is gone. Safe
  // from several threads at once.
  bool send(const std::string& line);
  // The next line, or nothing at the end of the connection or once `wake_fd` (when given)
  // becomes readable. One reader at a time.
  std::optional<std::string> receive(int wake_fd = -1);

 private:
  int fd_;
  std::mutex send_mutex_;
  std::string buffer_;
};

struct WorkerProcess {
  pid_t pid = -1;
  std::unique_ptr<WorkerLink> link;
};

// Starts this program (/proc/self/exe) as `hazefree job work ARGUMENTS... --link-fd 3`, its end
// of a new connection as its descriptor 3. Throws JobError when it cannot be started.
WorkerProcess start_worker_process(const std::vector<std::string>& arguments);

// A waitpid() status in words: "exited with status 3", "ended by signal 9 (Killed)".
std::string describe_exit(int status);

// The first word of a line and the rest ("task 3" -> "task", "3").
std::pair<std::string, std::string> split_message(const std::string& line);

}  // namespace hazefree::jobs
