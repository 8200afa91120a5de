#include <doctest/doctest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "pipeline/bounded_queue.hpp"

using hazefree::BoundedQueue;

TEST_CASE("bounded queue: FIFO order and capacity") {
  BoundedQueue<int> q(3);
  CHECK(q.capacity() == 3);
  for (int i = 0; i < 3; ++i) CHECK(q.push(i));
  CHECK(q.size() == 3);
  for (int i = 0; i < 3; ++i) CHECK(*q.pop() == i);
  CHECK(q.size() == 0);
}

TEST_CASE("bounded queue: zero capacity is refused") {
  CHECK_THROWS_AS(BoundedQueue<int>(0), std::invalid_argument);
}

TEST_CASE("bounded queue: close lets the consumer drain, then ends") {
  BoundedQueue<int> q(4);
  q.push(1);
  q.push(2);
  q.close();
  CHECK_FALSE(q.push(3));
  CHECK(*q.pop() == 1);
  CHECK(*q.pop() == 2);
  CHECK_FALSE(q.pop().has_value());
}

TEST_CASE("bounded queue: abort discards waiting items and returns them") {
  BoundedQueue<int> q(4);
  q.push(7);
  q.push(8);
  auto rest = q.abort();
  CHECK(rest.size() == 2);
  CHECK_FALSE(q.pop().has_value());
}

TEST_CASE("bounded queue: a full queue blocks the producer until the consumer pops") {
  BoundedQueue<int> q(1);
  q.push(1);
  std::atomic<bool> pushed{false};
  std::thread producer([&] {
    q.push(2);
    pushed = true;
  });
  // The producer cannot finish until there is room: pop, then it completes.
  CHECK(*q.pop() == 1);
  producer.join();
  CHECK(pushed);
  CHECK(*q.pop() == 2);
}

TEST_CASE("bounded queue: close wakes a producer blocked on a full queue") {
  BoundedQueue<int> q(1);
  q.push(1);
  std::atomic<int> result{-1};
  std::thread producer([&] { result = q.push(2) ? 1 : 0; });
  q.close();
  producer.join();
  CHECK(result == 0);
}

TEST_CASE("bounded queue: close wakes a consumer blocked on an empty queue") {
  BoundedQueue<int> q(2);
  std::atomic<int> result{-1};
  std::thread consumer([&] { result = q.pop().has_value() ? 1 : 0; });
  q.close();
  consumer.join();
  CHECK(result == 0);
}

TEST_CASE("bounded queue: remove_oldest_if takes the oldest matching item only") {
  BoundedQueue<int> q(5);
  for (int v : {1, 2, 3, 4}) q.push(v);
  auto even = q.remove_oldest_if([](int v) { return v % 2 == 0; });
  REQUIRE(even.has_value());
  CHECK(*even == 2);
  CHECK_FALSE(q.remove_oldest_if([](int v) { return v > 10; }).has_value());
  std::vector<int> rest;
  q.close();
  while (auto v = q.pop()) rest.push_back(*v);
  CHECK(rest == std::vector<int>{1, 3, 4});
}

TEST_CASE("bounded queue: remove_oldest_if_full takes an item only from a full queue") {
  BoundedQueue<int> q(3);
  q.push(1);
  q.push(2);
  CHECK_FALSE(q.remove_oldest_if_full([](int) { return true; }).has_value());  // room left
  q.push(3);
  CHECK_FALSE(q.remove_oldest_if_full([](int v) { return v > 10; }).has_value());
  auto odd = q.remove_oldest_if_full([](int v) { return v % 2 == 1; });
  REQUIRE(odd.has_value());
  CHECK(*odd == 1);
  CHECK(q.size() == 2);
  CHECK_FALSE(q.remove_oldest_if_full([](int) { return true; }).has_value());
}

TEST_CASE("bounded queue: many items across threads arrive once each, in order") {
  BoundedQueue<int> q(2);
  constexpr int kCount = 20000;
  std::thread producer([&] {
    for (int i = 0; i < kCount; ++i) q.push(i);
    q.close();
  });
  int expected = 0;
  while (auto v = q.pop()) {
    CHECK(*v == expected);
    ++expected;
  }
  producer.join();
  CHECK(expected == kCount);
}

TEST_CASE("bounded queue: try_pop returns at once, empty or not") {
  BoundedQueue<int> q(2);
  CHECK_FALSE(q.try_pop().has_value());
  q.push(5);
  auto v = q.try_pop();
  REQUIRE(v.has_value());
  CHECK(*v == 5);
  CHECK(q.size() == 0);
}
