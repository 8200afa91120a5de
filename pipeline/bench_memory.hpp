// `hazefree bench`'s memory probes: the process's peak resident memory and the device memory a
// CUDA backend added.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace hazefree::bench {

// The process's peak resident memory, VmHWM of /proc/self/status. restart() starts a new peak at
// the current resident size (writing "5" to /proc/self/clear_refs, Linux 4.0 and later), so that
// a row's peak_host_bytes is the highest resident size of the whole process during that row: what
// was resident before it (the program, the source frames) included, not the row's growth alone.
// Where the kernel refuses the restart, the peaks are the process's since it started and the
// document says so (peak_host_scope "process" instead of "row"); null where there is no VmHWM.
class HostPeak {
 public:
  void restart();
  std::optional<std::uint64_t> read() const;
  const char* scope() const { return per_row_ ? "row" : "process"; }

 private:
  bool per_row_ = true;
};

// Device memory a CUDA backend added: gpu_memory_in_use() (the device's used memory, all
// processes', so it assumes no other process allocates meanwhile) read with the processor still
// alive at the end of the row, minus the reading before the processor was created. A backend
// allocates its workspaces on the first frame of a size and never per frame, so this is its peak.
// The first reading starts the CUDA context, which is not counted as the backend's. Null for the
// CPU backend, which allocates no device memory (the device-wide count would show other
// processes only), and so in a build without CUDA.
class DeviceMemory {
 public:
  explicit DeviceMemory(bool cuda_backend);
  std::optional<std::uint64_t> added() const;

 private:
  bool on_;
  std::size_t before_ = 0;
};

}  // namespace hazefree::bench
