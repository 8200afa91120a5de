#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "fuzz_harness.hpp"
#include "pipeline/options.hpp"

namespace hazefree::fuzz {

void config_one_input(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);

  // The parser reads a file, as -c does.
  const std::string path = "/tmp/hazefree-fuzz-config-" + std::to_string(getpid()) + ".toml";
  if (std::FILE* file = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, file);
    std::fclose(file);
    try {
      RunOptions options;
      apply_config_file(options, path);
      finalize_options(options);
      (void)format_config(options);
    } catch (const UsageError&) {
    }
    std::remove(path.c_str());
  }

  // Every line with '=' as a --set.
  RunOptions options;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    const std::size_t eq = line.find('=');
    if (eq != std::string::npos) {
      try {
        set_config_value(options, line.substr(0, eq), line.substr(eq + 1));
      } catch (const UsageError&) {
      }
    }
    start = end + 1;
  }
  try {
    finalize_options(options);
  } catch (const UsageError&) {
  }

  // The words as a command line.
  std::vector<std::string> words{"hazefree"};
  std::string word;
  for (const char c : text) {
    if (c == ' ' || c == '\n' || c == '\t' || c == '\0') {
      if (!word.empty()) words.push_back(word);
      word.clear();
    } else {
      word.push_back(c);
    }
  }
  if (!word.empty()) words.push_back(word);
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  try {
    RunOptions parsed;
    std::string message;
    (void)parse_command_line(static_cast<int>(words.size()), argv.data(), parsed, message);
  } catch (const UsageError&) {
  }
}

}  // namespace hazefree::fuzz

#ifdef HAZEFREE_FUZZ_ENTRY
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  hazefree::fuzz::config_one_input(data, size);
  return 0;
}
#endif
