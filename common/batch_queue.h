#pragma once

#include <cstddef>
#include <deque>
#include <optional>
#include <utility>

namespace relay::common {

// The messages waiting for one stream's writes, grouped into batches so that
// one write carries everything that became ready while the previous write was
// in flight (and a lone message goes out at once). A batch is cut at
// batch_bytes (a larger message travels alone); the bytes waiting are bounded
// by max_bytes, so that a peer that stops reading costs bounded memory.
//
// Batch is a message with a repeated field whose adder is Add (for protobuf:
// &relay::v1::RouterBatch::add_commands). Not thread-safe: the owner's lock
// covers it. Plain C++, no gRPC types.
template <typename Batch, typename Item, Item* (Batch::*Add)()>
class BatchQueue {
 public:
  BatchQueue(size_t batch_bytes, size_t max_bytes)
      : batch_bytes_(batch_bytes), max_bytes_(max_bytes) {}

  // False, with nothing queued, when the bound would be passed.
  bool Push(Item&& item, size_t bytes) {
    if (queued_bytes_ + bytes > max_bytes_) {
      return false;
    }
    if (batches_.empty() || batches_.back().bytes + bytes > batch_bytes_) {
      batches_.emplace_back();
    }
    Pending& last = batches_.back();
    *(last.batch.*Add)() = std::move(item);
    last.bytes += bytes;
    queued_bytes_ += bytes;
    return true;
  }

  // The next batch to write, if none is being written and one waits. Finish
  // it with Written() once its write completed.
  Batch* Next() {
    if (writing_ || batches_.empty()) {
      return nullptr;
    }
    writing_ = true;
    current_ = std::move(batches_.front());
    batches_.pop_front();
    return &current_.batch;
  }

  void Written() {
    writing_ = false;
    queued_bytes_ -= current_.bytes;
    current_ = Pending{};
  }

  bool writing() const { return writing_; }
  size_t queued_bytes() const { return queued_bytes_; }
  bool empty() const { return batches_.empty(); }

 private:
  struct Pending {
    Batch batch;
    size_t bytes = 0;
  };

  const size_t batch_bytes_;
  const size_t max_bytes_;
  std::deque<Pending> batches_;
  Pending current_;
  size_t queued_bytes_ = 0;  // including the batch being written
  bool writing_ = false;
};

}  // namespace relay::common
