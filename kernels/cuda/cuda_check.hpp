// Error checking for CUDA runtime calls and kernel launches.
// HAZEFREE_CUDA_CHECK throws std::runtime_error naming the expression, file:line and the error;
// HAZEFREE_CUDA_CHECK_NOTHROW reports to stderr instead, for destructors and cleanup paths.
#pragma once

#include <cuda_runtime.h>

#include <string>

namespace hazefree::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t error, const char* expression, const char* file,
                                   int line);
void report_cuda_error(cudaError_t error, const char* expression, const char* file,
                       int line) noexcept;

}  // namespace hazefree::cuda

#define HAZEFREE_CUDA_CHECK(expr)                                                    \
  do {                                                                               \
    const cudaError_t hazefree_cuda_error_ = (expr);                                 \
    if (hazefree_cuda_error_ != cudaSuccess)                                         \
      ::hazefree::cuda::throw_cuda_error(hazefree_cuda_error_, #expr, __FILE__, __LINE__); \
  } while (0)

#define HAZEFREE_CUDA_CHECK_NOTHROW(expr)                                             \
  do {                                                                                \
    const cudaError_t hazefree_cuda_error_ = (expr);                                  \
    if (hazefree_cuda_error_ != cudaSuccess)                                          \
      ::hazefree::cuda::report_cuda_error(hazefree_cuda_error_, #expr, __FILE__, __LINE__); \
  } while (0)

// After every kernel launch: a bad configuration or an earlier asynchronous fault surfaces here.
#define HAZEFREE_CUDA_CHECK_LAUNCH(kernel_name)                                        \
  do {                                                                                 \
    const cudaError_t hazefree_cuda_error_ = cudaGetLastError();                       \
    if (hazefree_cuda_error_ != cudaSuccess)                                           \
      ::hazefree::cuda::throw_cuda_error(hazefree_cuda_error_, "launch of " kernel_name, \
                                         __FILE__, __LINE__);                          \
  } while (0)
