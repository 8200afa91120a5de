#include "pipeline/frame_pool.hpp"

#include "kernels/processor.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <new>
#include <stdexcept>
#include <utility>

namespace hazefree {

namespace {
constexpr int kRowAlign = 64;
}  // namespace

BufferAllocator BufferAllocator::heap() {
  return {[](std::size_t bytes) -> void* { return ::operator new(bytes, std::align_val_t{64}); },
          [](void* p) { ::operator delete(p, std::align_val_t{64}); }};
}

BufferAllocator huge_page_heap() {
  return {[](std::size_t bytes) -> void* {
            constexpr std::size_t kHugePage = std::size_t{2} << 20;
            void* p = nullptr;
            if (posix_memalign(&p, kHugePage, bytes) != 0) return nullptr;
            (void)madvise(p, bytes, MADV_HUGEPAGE);  // advice only: where refused, ordinary pages
            return p;
          },
          [](void* p) { std::free(p); }};
}

struct BufferCache::Shelf {
  BufferAllocator underlying;
  std::mutex mutex;
  std::map<std::size_t, std::vector<void*>> free;  // by size
  std::map<void*, std::size_t> sizes;              // every buffer it made and holds
  bool keeping = true;
  ~Shelf() {
    for (const auto& [buffer, bytes] : sizes) underlying.release(buffer);
  }
};

BufferCache::BufferCache(BufferAllocator underlying) : shelf_(std::make_shared<Shelf>()) {
  shelf_->underlying = std::move(underlying);
}

BufferAllocator BufferCache::allocator() const {
  std::shared_ptr<Shelf> shelf = shelf_;
  return {[shelf](std::size_t bytes) -> void* {
            {
              std::lock_guard lock(shelf->mutex);
              std::vector<void*>& kept = shelf->free[bytes];
              if (!kept.empty()) {
                void* buffer = kept.back();
                kept.pop_back();
                return buffer;
              }
            }
            void* buffer = shelf->underlying.allocate(bytes);
            if (buffer) {
              std::lock_guard lock(shelf->mutex);
              shelf->sizes[buffer] = bytes;
            }
            return buffer;
          },
          [shelf](void* buffer) {
            {
              std::lock_guard lock(shelf->mutex);
              if (shelf->keeping) {
                shelf->free[shelf->sizes.at(buffer)].push_back(buffer);
                return;
              }
              shelf->sizes.erase(buffer);
            }
            shelf->underlying.release(buffer);
          }};
}

void BufferCache::stop_keeping() {
  std::lock_guard lock(shelf_->mutex);
  shelf_->keeping = false;
}

BufferAllocator BufferAllocator::pinned_or_heap() {
  void* probe = allocate_pinned_host(64);
  if (!probe) return heap();
  free_pinned_host(probe);
  return {[](std::size_t bytes) { return allocate_pinned_host(bytes); },
          [](void* p) { free_pinned_host(p); }};
}

FramePool::FramePool(std::size_t count, PixelFormat format, int width, int height,
                     BufferAllocator allocator, int depth, std::size_t allocated_now)
    : allocator_(std::move(allocator)), format_(format), width_(width), height_(height), depth_(depth) {
  if (count == 0) throw std::invalid_argument("frame pool needs at least one buffer");
  buffer_bytes_ = frame_bytes(format, width, height, kRowAlign, depth);
  buffers_.reserve(count);
  frames_.resize(count);  // never resized again: frames are handed out by address
  free_.reserve(count);
  try {
    for (std::size_t i = 0; i < std::min(count, std::max<std::size_t>(allocated_now, 1)); ++i) {
      PooledFrame* frame = allocate_frame_locked();
      free_.push_back(frame);
    }
  } catch (...) {
    for (void* memory : buffers_) allocator_.release(memory);
    throw;
  }
}

FramePool::~FramePool() {
  for (void* memory : buffers_)
    if (memory) allocator_.release(memory);
}

PooledFrame* FramePool::allocate_frame_locked() {
  void* memory = allocator_.allocate(buffer_bytes_);
  if (!memory) throw std::bad_alloc();
  const std::size_t i = buffers_.size();
  buffers_.push_back(memory);
  frames_[i].view = make_view(format_, width_, height_, static_cast<std::uint8_t*>(memory), kRowAlign, depth_);
  frames_[i].slot = i;
  return &frames_[i];
}

PooledFrame* FramePool::take_free_locked() {
  if (free_.empty()) return recycling_ && buffers_.size() < frames_.size() ? allocate_frame_locked() : nullptr;
  PooledFrame* frame = free_.back();
  free_.pop_back();
  return frame;
}

PooledFrame* FramePool::acquire() {
  std::unique_lock lock(mutex_);
  available_.wait(lock, [&] { return closed_ || !free_.empty() || !recycling_ || buffers_.size() < frames_.size(); });
  if (closed_) return nullptr;
  return take_free_locked();
}

PooledFrame* FramePool::try_acquire() {
  std::lock_guard lock(mutex_);
  if (closed_) return nullptr;
  return take_free_locked();
}

void FramePool::release(PooledFrame* frame) {
  if (!frame) return;
  void* freed = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (frame->slot >= buffers_.size() || &frames_[frame->slot] != frame || !buffers_[frame->slot])
      throw std::logic_error("frame returned to a pool it does not belong to");
    if (recycling_) {
      free_.push_back(frame);
      available_.notify_one();
      return;
    }
    freed = std::exchange(buffers_[frame->slot], nullptr);
  }
  allocator_.release(freed);  // outside the lock: freeing gigabytes takes the kernel a while
}

void FramePool::stop_recycling() {
  std::vector<void*> freed;
  {
    std::lock_guard lock(mutex_);
    recycling_ = false;
    for (PooledFrame* frame : free_) freed.push_back(std::exchange(buffers_[frame->slot], nullptr));
    free_.clear();
    available_.notify_all();  // a waiter finds nothing more to come
  }
  for (void* memory : freed) allocator_.release(memory);
}

void FramePool::close() {
  std::lock_guard lock(mutex_);
  closed_ = true;
  available_.notify_all();
}

std::size_t FramePool::bytes() const {
  std::lock_guard lock(mutex_);
  return buffer_bytes_ * static_cast<std::size_t>(std::count_if(buffers_.begin(), buffers_.end(), [](void* b) { return b != nullptr; }));
}

std::size_t FramePool::free_count() const {
  std::lock_guard lock(mutex_);
  return free_.size();
}

}  // namespace hazefree
