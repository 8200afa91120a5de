// The CUDA backend's entry points in a build without CUDA.
#include <stdexcept>

#include "kernels/processor.hpp"

namespace hazefree {

bool cuda_available(std::string* why_not) {
  if (why_not) *why_not = "this build of hazefree has no CUDA backend";
  return false;
}

std::string gpu_name() { return {}; }

std::unique_ptr<FrameProcessor> make_cuda_processor(const ProcessingConfig&) {
  throw std::runtime_error("the CUDA backend is not available: this build of hazefree has no CUDA support");
}

}  // namespace hazefree

namespace hazefree {

void* allocate_pinned_host(std::size_t) { return nullptr; }
void free_pinned_host(void*) {}
std::size_t gpu_memory_in_use() { return 0; }
int cuda_device_count() { return 0; }
std::size_t cuda_device_memory(int) { return 0; }
void use_gpu(int) {}
bool use_blocking_gpu_waits() { return false; }

}  // namespace hazefree
