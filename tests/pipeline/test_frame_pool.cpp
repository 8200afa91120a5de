#include <doctest/doctest.h>

#include <atomic>
#include <memory>
#include <set>
#include <thread>

#include "pipeline/frame_pool.hpp"

using namespace hazefree;

namespace {

// Plain memory, counting each allocation and each release.
BufferAllocator counting_allocator(std::atomic<int>& allocations, std::atomic<int>& releases) {
  return {[&allocations](std::size_t n) {
            ++allocations;
            return ::operator new(n);
          },
          [&releases](void* p) {
            ++releases;
            ::operator delete(p);
          }};
}

}  // namespace

TEST_CASE("frame pool: hands out each buffer once, with the frame geometry") {
  FramePool pool(3, PixelFormat::yuv420p, 33, 17);
  CHECK(pool.size() == 3);
  std::set<PooledFrame*> frames;
  for (int i = 0; i < 3; ++i) {
    PooledFrame* f = pool.acquire();
    REQUIRE(f);
    CHECK(f->view.width == 33);
    CHECK(f->view.height == 17);
    CHECK(f->view.planes[1].width == 17);
    CHECK(f->view.planes[1].height == 9);
    CHECK(f->view.planes[0].stride % 64 == 0);
    frames.insert(f);
  }
  CHECK(frames.size() == 3);
  CHECK(pool.free_count() == 0);
  CHECK(pool.try_acquire() == nullptr);
  for (PooledFrame* f : frames) pool.release(f);
  CHECK(pool.free_count() == 3);
}

TEST_CASE("frame pool: buffers do not overlap and are writable end to end") {
  FramePool pool(2, PixelFormat::nv12, 65, 31);
  PooledFrame* a = pool.acquire();
  PooledFrame* b = pool.acquire();
  for (PooledFrame* f : {a, b}) {
    for (int p = 0; p < f->view.plane_count; ++p) {
      const PlaneView& plane = f->view.planes[p];
      for (int y = 0; y < plane.height; ++y)
        for (int x = 0; x < plane.width * bytes_per_sample(PixelFormat::nv12, p); ++x)
          plane.data[y * plane.stride + x] = f == a ? 1 : 2;
    }
  }
  CHECK(a->view.planes[1].data[0] == 1);
  CHECK(b->view.planes[0].data[0] == 2);
  pool.release(a);
  pool.release(b);
}

TEST_CASE("frame pool: the allocator is called once per buffer, never per frame") {
  std::atomic<int> allocations{0}, releases{0};
  {
    const BufferAllocator counting = counting_allocator(allocations, releases);
    FramePool pool(4, PixelFormat::gray8, 16, 16, counting);
    for (int i = 0; i < 1000; ++i) pool.release(pool.acquire());
    CHECK(allocations == 4);
  }
  CHECK(releases == 4);
}

TEST_CASE("frame pool: close wakes a waiter, which gets nothing") {
  FramePool pool(1, PixelFormat::gray8, 8, 8);
  PooledFrame* only = pool.acquire();
  std::atomic<int> got{-1};
  std::thread waiter([&] { got = pool.acquire() == nullptr ? 0 : 1; });
  pool.close();
  waiter.join();
  CHECK(got == 0);
  pool.release(only);
}

TEST_CASE("frame pool: a frame from another pool is refused") {
  FramePool a(1, PixelFormat::gray8, 8, 8), b(1, PixelFormat::gray8, 8, 8);
  PooledFrame* f = a.acquire();
  CHECK_THROWS_AS(b.release(f), std::logic_error);
  a.release(f);
}

TEST_CASE("frame pool: once it stops recycling, each buffer is freed as it comes back, once, and none is handed out") {
  std::atomic<int> allocations{0}, releases{0};
  const BufferAllocator counting = counting_allocator(allocations, releases);
  {
    FramePool pool(4, PixelFormat::gray8, 16, 16, counting);
    PooledFrame* a = pool.acquire();
    PooledFrame* b = pool.acquire();
    pool.stop_recycling();
    CHECK(releases == 2);  // the two free ones
    CHECK(pool.try_acquire() == nullptr);
    CHECK(pool.acquire() == nullptr);  // no wait for a buffer that will not come
    pool.release(a);
    CHECK(releases == 3);
    CHECK(pool.free_count() == 0);
    CHECK_THROWS_AS(pool.release(a), std::logic_error);  // given back twice
    CHECK(releases == 3);
    pool.release(b);
    CHECK(releases == 4);
  }
  CHECK(allocations == 4);
  CHECK(releases == 4);  // the pool's end frees nothing twice
}

TEST_CASE("buffer cache: keeps given-back buffers for the next pool until told it need not, then frees them as they come") {
  std::atomic<int> allocations{0}, releases{0};
  const BufferAllocator counting = counting_allocator(allocations, releases);
  {
    auto cache = std::make_shared<BufferCache>(counting);
    { FramePool first(3, PixelFormat::gray8, 16, 16, cache->allocator()); }
    CHECK(allocations == 3);
    CHECK(releases == 0);  // kept
    FramePool second(3, PixelFormat::gray8, 16, 16, cache->allocator());
    CHECK(allocations == 3);  // the kept ones again
    PooledFrame* held = second.acquire();
    cache->stop_keeping();
    second.stop_recycling();
    CHECK(releases == 2);
    second.release(held);
    CHECK(releases == 3);
  }
  CHECK(releases == 3);
}
