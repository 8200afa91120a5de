// Small helpers shared by the test suites (paths, temporary folders, loopback ports).
#pragma once

#include <cstdint>
#include <string>

namespace hazefree::test {

// Path of a file under samples/.
std::string sample_path(const std::string& name);
// A fresh, empty folder under the build tree for one test (removed and recreated).
std::string temp_dir(const std::string& name);

// A loopback socket of `type` (SOCK_STREAM, SOCK_DGRAM) bound to a port of the kernel's choice,
// that port in *port; throws std::runtime_error when the system refuses.
int bound_loopback_socket(int type, int* port);
// A loopback port of `type` nobody uses right now (bound, then closed).
int free_loopback_port(int type);

}  // namespace hazefree::test
