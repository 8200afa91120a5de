// What belongs to a CUDA context, and the driver functions that name contexts.
// A kernel's raised dynamic shared-memory limit (cudaFuncSetAttribute) holds in the context
// current when it was set: one process may launch the same kernel in several contexts (the
// runtime's primary one, GStreamer's CUDA memory, a framework beside it in Python), so the limit
// is remembered per context and set again in each.
#pragma once

#include <string>

namespace hazefree::cuda {

// A driver API function (cuCtx..., of the given ABI version) found through the runtime, which
// loads the driver (the library does not link libcuda itself). Throws when the driver lacks it.
void* driver_entry_point(const char* name, unsigned version);
template <typename F>
F driver_function(const char* name, unsigned version) {
  return reinterpret_cast<F>(driver_entry_point(name, version));
}

// Makes `kernel` launchable with `bytes` of dynamic shared memory in the current context: sets
// cudaFuncAttributeMaxDynamicSharedMemorySize when this context has not had that value set for
// this kernel (once per context and value, not per launch). Thread-safe.
void set_max_dynamic_shared_memory(const void* kernel, int bytes);

template <typename... Args>
void set_max_dynamic_shared_memory(void (*kernel)(Args...), int bytes) {
  set_max_dynamic_shared_memory(reinterpret_cast<const void*>(kernel), bytes);
}

}  // namespace hazefree::cuda
