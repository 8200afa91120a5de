#include "pipeline/bench_memory.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "kernels/processor.hpp"

namespace hazefree::bench {

void HostPeak::restart() {
  const int fd = ::open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
  const bool done = fd >= 0 && ::write(fd, "5", 1) == 1;
  if (fd >= 0) ::close(fd);
  if (!done) per_row_ = false;
}

std::optional<std::uint64_t> HostPeak::read() const {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    unsigned long long kib = 0;
    if (std::sscanf(line.c_str(), "VmHWM: %llu kB", &kib) == 1) return std::uint64_t(kib) * 1024;
  }
  return std::nullopt;
}

DeviceMemory::DeviceMemory(bool cuda_backend) : on_(cuda_backend) {
  if (on_) before_ = gpu_memory_in_use();
}

std::optional<std::uint64_t> DeviceMemory::added() const {
  if (!on_) return std::nullopt;
  const std::size_t after = gpu_memory_in_use();
  return after > before_ ? after - before_ : 0;
}

}  // namespace hazefree::bench
