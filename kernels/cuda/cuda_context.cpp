// Per-context kernel limits: the current context is named by its driver id (cuCtxGetId, unique
// for the life of the process, so a context made where a destroyed one was is a new one).
#include "kernels/cuda/cuda_context.hpp"

#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "kernels/cuda/cuda_check.hpp"

namespace hazefree::cuda {

void* driver_entry_point(const char* name, unsigned version) {
  void* pointer = nullptr;
  cudaDriverEntryPointQueryResult status{};
  HAZEFREE_CUDA_CHECK(cudaGetDriverEntryPointByVersion(name, &pointer, version, cudaEnableDefault, &status));
  if (status != cudaDriverEntryPointSuccess || pointer == nullptr)
    throw std::runtime_error(std::string("the CUDA driver has no ") + name + " (version " +
                             std::to_string(version) + ")");
  return pointer;
}

namespace {

// The id of the context current on this thread, made current first if none is (the runtime's
// primary context of the current device, as a launch would).
unsigned long long current_context_id() {
  static const auto current = driver_function<PFN_cuCtxGetCurrent_v4000>("cuCtxGetCurrent", 4000);
  static const auto id_of = driver_function<PFN_cuCtxGetId_v12000>("cuCtxGetId", 12000);
  CUcontext context = nullptr;
  if (current(&context) != CUDA_SUCCESS || context == nullptr) {
    HAZEFREE_CUDA_CHECK(cudaFree(nullptr));  // initialises the current device's primary context
    if (current(&context) != CUDA_SUCCESS || context == nullptr)
      throw std::runtime_error("no CUDA context is current after initialising the device");
  }
  unsigned long long id = 0;
  if (id_of(context, &id) != CUDA_SUCCESS) throw std::runtime_error("cannot read the current CUDA context's id");
  return id;
}

}  // namespace

void set_max_dynamic_shared_memory(const void* kernel, int bytes) {
  static std::mutex mutex;
  static std::map<std::pair<unsigned long long, const void*>, int> set;  // (context, kernel): bytes
  const auto key = std::make_pair(current_context_id(), kernel);
  std::lock_guard<std::mutex> lock(mutex);
  const auto found = set.find(key);
  if (found != set.end() && found->second == bytes) return;
  HAZEFREE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  set[key] = bytes;
}

}  // namespace hazefree::cuda
