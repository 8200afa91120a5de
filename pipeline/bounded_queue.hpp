// A bounded FIFO between two pipeline threads. Either side can close it: a closed queue wakes
// every waiter, refuses new items, and lets the consumer drain what is left (close) or drops it
// (abort). No busy-waiting: condition variables only.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <stdexcept>

namespace hazefree {

template <typename T>
class BoundedQueue {
 public:
  explicit BoundedQueue(std::size_t capacity) : capacity_(capacity) {
    if (capacity == 0) throw std::invalid_argument("queue capacity must be at least 1");
  }

  // Blocks while full. Returns false (and leaves `item` untouched) if the queue is closed.
  bool push(T& item) {
    std::unique_lock lock(mutex_);
    not_full_.wait(lock, [&] { return closed_ || items_.size() < capacity_; });
    if (closed_) return false;
    items_.push_back(std::move(item));
    not_empty_.notify_one();
    return true;
  }
  bool push(T&& item) { return push(item); }

  // Blocks while empty. Returns nothing once the queue is closed and drained (or aborted).
  std::optional<T> pop() {
    std::unique_lock lock(mutex_);
    not_empty_.wait(lock, [&] { return closed_ || !items_.empty(); });
    if (items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    not_full_.notify_one();
    return item;
  }

  // Returns the oldest item at once, or nothing when the queue is empty right now.
  std::optional<T> try_pop() {
    std::lock_guard lock(mutex_);
    if (items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    not_full_.notify_one();
    return item;
  }

  // Removes and returns the oldest item satisfying `pred`, if any (live mode: drop the oldest
  // waiting frame instead of blocking the source).
  template <typename Pred>
  std::optional<T> remove_oldest_if(Pred pred) {
    std::lock_guard lock(mutex_);
    return remove_oldest_locked(pred);
  }

  // The same, only while the queue is full: with a single producer, its next push then does not
  // wait (live mode: the source is never held back by a full queue).
  template <typename Pred>
  std::optional<T> remove_oldest_if_full(Pred pred) {
    std::lock_guard lock(mutex_);
    if (items_.size() < capacity_) return std::nullopt;
    return remove_oldest_locked(pred);
  }

  // No more items will come: the consumer drains the rest, then pop() returns nothing.
  void close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
    not_empty_.notify_all();
    not_full_.notify_all();
  }

  // Like close(), and the waiting items are discarded (returned, so their resources go back).
  std::deque<T> abort() {
    std::lock_guard lock(mutex_);
    closed_ = true;
    std::deque<T> rest;
    rest.swap(items_);
    not_empty_.notify_all();
    not_full_.notify_all();
    return rest;
  }

  bool closed() const {
    std::lock_guard lock(mutex_);
    return closed_;
  }
  std::size_t size() const {
    std::lock_guard lock(mutex_);
    return items_.size();
  }
  std::size_t capacity() const { return capacity_; }

 private:
  template <typename Pred>
  std::optional<T> remove_oldest_locked(Pred& pred) {
    for (auto it = items_.begin(); it != items_.end(); ++it) {
      if (pred(*it)) {
        T item = std::move(*it);
        items_.erase(it);
        not_full_.notify_one();
        return item;
      }
    }
    return std::nullopt;
  }

  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable not_empty_;
  std::condition_variable not_full_;
  std::deque<T> items_;
  bool closed_ = false;
};

}  // namespace hazefree
