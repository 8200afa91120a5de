// Page-locked host memory for the pipeline's frame pools: the copies of the CUDA lanes overlap
// compute only from pinned memory.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "kernels/processor.hpp"

namespace hazefree {

void* allocate_pinned_host(std::size_t bytes) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    cudaGetLastError();  // clear the sticky "no device" error for later calls
    return nullptr;
  }
  void* memory = nullptr;
  if (cudaMallocHost(&memory, bytes) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return memory;
}

void free_pinned_host(void* memory) {
  if (memory) cudaFreeHost(memory);
}

int cuda_device_count() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return devices;
}

std::size_t cuda_device_memory(int device) {
  cudaDeviceProp prop{};
  if (device < 0 || cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return prop.totalGlobalMem;
}

void use_gpu(int device) {
  if (device < 0) return;
  const cudaError_t error = cudaSetDevice(device);
  if (error != cudaSuccess) {
    cudaGetLastError();
    throw std::runtime_error("GPU " + std::to_string(device) + ": " + cudaGetErrorString(error));
  }
}

bool use_blocking_gpu_waits() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  int current = 0;
  if (cudaGetDevice(&current) != cudaSuccess) current = 0;
  bool all = true;
  for (int d = 0; d < devices; ++d) {
    if (cudaSetDevice(d) != cudaSuccess || cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync) != cudaSuccess) {
      cudaGetLastError();
      all = false;
    }
  }
  cudaSetDevice(current);
  cudaGetLastError();
  return all;
}

std::size_t gpu_memory_in_use() {
  std::size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return total - free;
}

}  // namespace hazefree
