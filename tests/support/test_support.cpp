#include "support/test_support.hpp"

#include <filesystem>

namespace hazefree::test {

std::string sample_path(const std::string& name) {
  return std::string(HAZEFREE_SAMPLES_DIR) + "/" + name;
}

std::string temp_dir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(HAZEFREE_TEST_TMP) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace hazefree::test
