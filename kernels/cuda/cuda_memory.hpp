// RAII owners of CUDA resources: device buffers, pinned host buffers, streams, events, graphs.
// Allocation happens when a workspace is (re)shaped, never per frame.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "kernels/cuda/cuda_check.hpp"

namespace hazefree::cuda {

// Where a CudaBuffer's memory comes from; each names the CUDA call in its error messages.
struct DeviceMemory {
  static void allocate(void** p, std::size_t bytes) { HAZEFREE_CUDA_CHECK(cudaMalloc(p, bytes)); }
  static void release(void* p) noexcept { HAZEFREE_CUDA_CHECK_NOTHROW(cudaFree(p)); }
};
// Page-locked host memory: asynchronous copies overlap with compute only from such buffers.
struct PinnedMemory {
  static void allocate(void** p, std::size_t bytes) { HAZEFREE_CUDA_CHECK(cudaMallocHost(p, bytes)); }
  static void release(void* p) noexcept { HAZEFREE_CUDA_CHECK_NOTHROW(cudaFreeHost(p)); }
};

// An array of `count` T in the memory `Memory` provides.
template <typename T, typename Memory>
class CudaBuffer {
 public:
  CudaBuffer() = default;
  explicit CudaBuffer(std::size_t count) { allocate(count); }
  ~CudaBuffer() { release(); }
  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;
  CudaBuffer(CudaBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  CudaBuffer& operator=(CudaBuffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }

  // Reallocates only when the current buffer is too small; contents are not kept.
  void reserve(std::size_t count) {
    if (count <= count_) return;
    release();
    allocate(count);
  }
  T* get() const { return data_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

 private:
  void allocate(std::size_t count) {
    if (count == 0) return;
    void* p = nullptr;
    Memory::allocate(&p, count * sizeof(T));
    data_ = static_cast<T*>(p);
    count_ = count;
  }
  void release() noexcept {
    if (data_) Memory::release(data_);
    data_ = nullptr;
    count_ = 0;
  }
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

template <typename T>
using DeviceBuffer = CudaBuffer<T, DeviceMemory>;
template <typename T>
using PinnedBuffer = CudaBuffer<T, PinnedMemory>;

class Stream {
 public:
  Stream() { HAZEFREE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (stream_) HAZEFREE_CUDA_CHECK_NOTHROW(cudaStreamDestroy(stream_));
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  cudaStream_t get() const { return stream_; }
  void synchronize() const { HAZEFREE_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

 private:
  cudaStream_t stream_ = nullptr;
};

class Event {
 public:
  explicit Event(bool timing = true) {
    HAZEFREE_CUDA_CHECK(
        cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
  }
  ~Event() {
    if (event_) HAZEFREE_CUDA_CHECK_NOTHROW(cudaEventDestroy(event_));
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  cudaEvent_t get() const { return event_; }
  void record(cudaStream_t stream) const { HAZEFREE_CUDA_CHECK(cudaEventRecord(event_, stream)); }
  void synchronize() const { HAZEFREE_CUDA_CHECK(cudaEventSynchronize(event_)); }

 private:
  cudaEvent_t event_ = nullptr;
};

// Milliseconds between two completed events.
inline float elapsed_ms(const Event& start, const Event& stop) {
  float ms = 0.f;
  HAZEFREE_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return ms;
}

// An instantiated CUDA graph (a captured per-frame kernel chain).
class GraphExec {
 public:
  GraphExec() = default;
  ~GraphExec() { release(); }
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;
  // Ends the capture on `stream` and instantiates the graph.
  void end_capture(cudaStream_t stream) {
    release();
    cudaGraph_t graph = nullptr;
    HAZEFREE_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    const cudaError_t error = cudaGraphInstantiate(&exec_, graph, 0);
    HAZEFREE_CUDA_CHECK_NOTHROW(cudaGraphDestroy(graph));
    HAZEFREE_CUDA_CHECK(error);
  }
  bool valid() const { return exec_ != nullptr; }
  void launch(cudaStream_t stream) const { HAZEFREE_CUDA_CHECK(cudaGraphLaunch(exec_, stream)); }
  void release() noexcept {
    if (exec_) HAZEFREE_CUDA_CHECK_NOTHROW(cudaGraphExecDestroy(exec_));
    exec_ = nullptr;
  }

 private:
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace hazefree::cuda
