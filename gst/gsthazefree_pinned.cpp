#include "gsthazefree_pinned.hpp"

namespace hazefree_gst {
namespace {

struct PinnedBlock {
  std::shared_ptr<PinnedPool> pool;
  void* data;
  std::size_t bytes;
};

void release_pinned(gpointer user_data) {
  auto* block = static_cast<PinnedBlock*>(user_data);
  {
    std::lock_guard guard(block->pool->lock);
    if (block->bytes == block->pool->bytes) block->pool->free.push_back(block->data);
    else hazefree::free_pinned(block->data);
  }
  delete block;
}

}  // namespace

GstBuffer* pinned_buffer(const std::shared_ptr<PinnedPool>& pool, std::size_t bytes) {
  void* data = nullptr;
  {
    std::lock_guard guard(pool->lock);
    if (pool->bytes != bytes) {
      for (void* block : pool->free) hazefree::free_pinned(block);
      pool->free.clear();
      pool->bytes = bytes;
    }
    if (!pool->free.empty()) {
      data = pool->free.back();
      pool->free.pop_back();
    }
  }
  if (!data) data = hazefree::allocate_pinned(bytes);
  if (!data) return nullptr;
  auto* block = new PinnedBlock{pool, data, bytes};
  return gst_buffer_new_wrapped_full(static_cast<GstMemoryFlags>(0), data, bytes, 0, bytes, block, release_pinned);
}

}  // namespace hazefree_gst
