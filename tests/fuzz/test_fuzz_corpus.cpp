// Replays every committed fuzz input (the seed corpus and the inputs that once crashed) through
// the harnesses in every build: a regression shows up in the normal test run and, in the
// sanitizer builds, as a sanitizer report.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_harness.hpp"

namespace {

std::vector<std::filesystem::path> corpus(const std::string& target) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(HAZEFREE_FUZZ_CORPUS) + "/" + target))
    if (entry.is_regular_file()) files.push_back(entry.path());
  return files;
}

std::string bytes_of(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("fuzz corpus: config inputs are accepted or refused with a usage error") {
  const auto files = corpus("config");
  CHECK(files.size() >= 5);
  for (const auto& file : files) {
    CAPTURE(file.string());
    const std::string bytes = bytes_of(file);
    CHECK_NOTHROW(hazefree::fuzz::config_one_input(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
  }
}

TEST_CASE("fuzz corpus: reader inputs are decoded or refused with an I/O error") {
  const auto files = corpus("reader");
  CHECK(files.size() >= 3);
  for (const auto& file : files) {
    CAPTURE(file.string());
    const std::string bytes = bytes_of(file);
    CHECK_NOTHROW(hazefree::fuzz::reader_one_input(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
  }
}

#if defined(HAZEFREE_HAVE_SERVE)
TEST_CASE("fuzz corpus: serve inputs are answered with HTTP, whatever the bytes") {
  const auto files = corpus("serve");
  CHECK(files.size() >= 5);
  for (const auto& file : files) {
    CAPTURE(file.string());
    const std::string bytes = bytes_of(file);
    CHECK_NOTHROW(hazefree::fuzz::serve_one_input(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
  }
}
#endif
