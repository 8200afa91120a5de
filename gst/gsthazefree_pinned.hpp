// Page-locked output buffers for the lanes (hazefree::allocate_pinned), recycled.
#pragma once

#include <gst/gst.h>

#include <hazefree/hazefree.hpp>

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace hazefree_gst {

// Page-locked output buffers of the lanes, recycled: a block comes back when downstream
// releases its buffer (from any thread), and is freed when its size is no longer the pool's.
struct PinnedPool {
  std::mutex lock;
  std::size_t bytes = 0;
  std::vector<void*> free;
  ~PinnedPool() {
    for (void* block : free) hazefree::free_pinned(block);
  }
};

// A GstBuffer of `bytes` page-locked bytes; nullptr where there is no such memory (no GPU).
GstBuffer* pinned_buffer(const std::shared_ptr<PinnedPool>& pool, std::size_t bytes);

}  // namespace hazefree_gst
