// Small helpers shared by the test suites (paths, temporary folders, image comparison).
#pragma once

#include <cstdint>
#include <string>

namespace hazefree::test {

// Path of a file under samples/.
std::string sample_path(const std::string& name);
// A fresh, empty folder under the build tree for one test (removed and recreated).
std::string temp_dir(const std::string& name);

}  // namespace hazefree::test
