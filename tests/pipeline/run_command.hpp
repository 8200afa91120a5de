// Runs the hazefree binary for the end-to-end tests and captures its exit status and stderr.
#pragma once

#include <string>

namespace hazefree::test {

struct CommandResult {
  int status = -1;  // exit status (128 + signal when killed)
  std::string err;  // what it wrote on stderr
  std::string out;  // what it wrote on stdout
};

// `arguments` is appended to the binary's path as shell words (quote paths yourself);
// `environment` ("NAME=value ...") is set for the command alone.
CommandResult run_hazefree(const std::string& arguments, const std::string& environment = "");

// What a shell command (ffprobe, ...) printed on stdout, trailing newlines removed; its stderr
// is dropped.
std::string output_of(const std::string& command);

}  // namespace hazefree::test
