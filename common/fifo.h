#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace relay::common {

// A first-in, first-out queue that holds no memory while it is empty and was never used, and
// gives back what it grew to once drained. std::deque allocates a 512-byte block and its map
// when it is constructed and keeps them: for a queue per connection (a tab's outbox, an HTTP
// connection's waiting responses, a session's replay), that is most of an idle connection's
// cost, tens of thousands of times over. Not thread-safe.
template <class T>
class Fifo {
 public:
  // Storage kept after the queue drains (so that a queue in steady use does not allocate on
  // every push); anything grown beyond it is given back.
  static constexpr size_t kKeptCapacity = 4;

  bool empty() const { return head_ == items_.size(); }
  size_t size() const { return items_.size() - head_; }
  // Elements' worth of storage held, taken ones included.
  size_t capacity() const { return items_.capacity(); }

  T& front() { return items_[head_]; }
  const T& front() const { return items_[head_]; }
  T& operator[](size_t i) { return items_[head_ + i]; }
  const T& operator[](size_t i) const { return items_[head_ + i]; }

  auto begin() { return items_.begin() + static_cast<std::ptrdiff_t>(head_); }
  auto end() { return items_.end(); }
  auto begin() const { return items_.begin() + static_cast<std::ptrdiff_t>(head_); }
  auto end() const { return items_.end(); }

  void push_back(T item) { items_.push_back(std::move(item)); }
  template <class... Args>
  T& emplace_back(Args&&... args) {
    return items_.emplace_back(std::forward<Args>(args)...);
  }

  void pop_front() {
    items_[head_] = T();  // what it held goes now, not when the queue drains
    if (++head_ == items_.size()) {
      clear();
    } else if (head_ >= 32 && head_ * 2 >= items_.size()) {
      // Half is taken: move the rest down, so that a queue that never drains stays bounded.
      items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }

  void clear() {
    head_ = 0;
    if (items_.capacity() > kKeptCapacity) {
      std::vector<T>().swap(items_);
    } else {
      items_.clear();
    }
  }

 private:
  std::vector<T> items_;
  size_t head_ = 0;  // items_[0, head_) are taken
};

}  // namespace relay::common
