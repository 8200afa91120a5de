#include "run_command.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "support/test_support.hpp"

namespace hazefree::test {

static std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string output_of(const std::string& command) {
  std::string text;
  if (FILE* pipe = popen((command + " 2>/dev/null").c_str(), "r")) {
    char buffer[4096];
    std::size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) text.append(buffer, n);
    pclose(pipe);
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

CommandResult run_hazefree(const std::string& arguments, const std::string& environment) {
  static int counter = 0;
  // ctest runs test cases as parallel processes: the pid keeps their folders apart.
  const std::string dir = temp_dir("command-" + std::to_string(getpid()) + "-" + std::to_string(++counter));
  const std::string out = dir + "/stdout", err = dir + "/stderr";
  const std::string command = (environment.empty() ? std::string() : "env " + environment + " ") + "'" + HAZEFREE_BINARY + "' " + arguments + " >'" + out + "' 2>'" + err + "' </dev/null";
  const int raw = std::system(command.c_str());
  CommandResult result;
  if (WIFEXITED(raw)) result.status = WEXITSTATUS(raw);
  else if (WIFSIGNALED(raw)) result.status = 128 + WTERMSIG(raw);
  result.out = slurp(out);
  result.err = slurp(err);
  return result;
}

}  // namespace hazefree::test
