// A fixed pool of frame buffers, allocated once (sized from the queue depths and the frames in
// flight) and recycled: nothing is allocated per frame. The allocator is pluggable so the same
// pool can hand out pinned host memory for the GPU lanes.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <climits>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "common/image.hpp"

namespace hazefree {

// One pooled frame: pixels plus the timing it travels with.
struct PooledFrame {
  ImageView view;
  std::int64_t pts = 0;
  std::int64_t duration = 0;
  std::int64_t capture_us = 0;  // when the decoder delivered it (latency measurement)
  std::int64_t index = 0;       // position in the input stream
  std::size_t slot = 0;         // index in its pool
};

// Allocates and frees the raw bytes of one buffer (e.g. new[]/delete[] or cudaHostAlloc).
struct BufferAllocator {
  std::function<void*(std::size_t)> allocate;
  std::function<void(void*)> release;
  static BufferAllocator heap();
  // Page-locked memory for the GPU lanes (allocate_pinned_host), plain heap where none can be had.
  static BufferAllocator pinned_or_heap();
};

// Buffers kept after their pool is gone, for the next pool (a job's worker, chunk after chunk:
// no allocation, page faults or page-locking per chunk). Thread-safe; what it holds is freed
// when the cache and every allocator made from it are gone.
class BufferCache {
 public:
  explicit BufferCache(BufferAllocator underlying);
  // Allocates from the cache (a buffer of that size given back earlier) or the underlying
  // allocator; releases into the cache, or to the underlying allocator after stop_keeping().
  BufferAllocator allocator() const;
  // No buffer will be asked for again (a job's worker on its last chunk): buffers given back from
  // now on are freed at once, while the work goes on, instead of all at the end.
  void stop_keeping();

 private:
  struct Shelf;
  std::shared_ptr<Shelf> shelf_;
};

// Plain memory advised for transparent huge pages: a held chunk of a job is gigabytes, and
// faulting it in 4 KiB at a time costs the encoders' cores.
BufferAllocator huge_page_heap();

class FramePool {
 public:
  // `count` buffers of `format` at width x height and `depth` bits per sample (two bytes a
  // sample above 8), rows aligned to 64 bytes. The first `allocated_now` of them (all when
  // larger than `count`) are allocated here, the others only when every allocated one is in use
  // (a job's chunk held in memory while it waits for its start state: as large as the chunk
  // needs, no larger).
  FramePool(std::size_t count, PixelFormat format, int width, int height,
            BufferAllocator allocator = BufferAllocator::heap(), int depth = 8,
            std::size_t allocated_now = SIZE_MAX);
  ~FramePool();
  FramePool(const FramePool&) = delete;
  FramePool& operator=(const FramePool&) = delete;

  // Blocks until a buffer is free; nullptr once the pool is closed.
  PooledFrame* acquire();
  // Returns nullptr at once when none is free.
  PooledFrame* try_acquire();
  void release(PooledFrame* frame);
  // No frame will be acquired again (a held chunk's input has ended): the free buffers, and each
  // one released from now on, go back to the allocator at once.
  void stop_recycling();
  // Wakes every waiter; acquire() returns nullptr from now on.
  void close();

  std::size_t size() const { return frames_.size(); }
  std::size_t free_count() const;  // free now, not counting those not yet allocated
  // Bytes of the buffers allocated so far, and the most the pool can allocate.
  std::size_t bytes() const;
  std::size_t capacity_bytes() const { return buffer_bytes_ * frames_.size(); }

 private:
  PooledFrame* take_free_locked();       // a free frame (allocating one if allowed), or nullptr
  PooledFrame* allocate_frame_locked();  // the next frame's buffer (throws std::bad_alloc)
  BufferAllocator allocator_;
  std::size_t buffer_bytes_ = 0;
  PixelFormat format_ = PixelFormat::yuv420p;
  int width_ = 0, height_ = 0, depth_ = 8;
  std::vector<void*> buffers_;
  std::vector<PooledFrame> frames_;
  std::vector<PooledFrame*> free_;
  mutable std::mutex mutex_;
  std::condition_variable available_;
  bool closed_ = false;
  bool recycling_ = true;
};

}  // namespace hazefree
