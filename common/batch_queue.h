#pragma once

#include <cstddef>
#include <deque>
#include <string>

namespace relay::common {

// The messages waiting for one stream's writes, serialised as they are queued
// and grouped into batches, so that one write carries everything that became
// ready while the previous write was in flight (and a lone message goes out at
// once). Each message is queued as an entry of its batch message's repeated
// field 1 (its tag, its length, then its bytes): a batch's bytes are that
// batch message serialised, though no batch message is ever built, copied
// into or serialised again. Each batch starts with header_bytes of room for
// the writer's own header (a link's frame length), so that a batch can be
// written as it is, without a copy. A batch is cut at batch_bytes (a larger
// message travels alone); the bytes waiting are bounded by max_bytes, so that
// a peer that stops reading costs bounded memory.
//
// Not thread-safe: the owner's lock covers it. Plain C++, no protobuf types.
class BatchQueue {
 public:
  BatchQueue(size_t batch_bytes, size_t max_bytes, size_t header_bytes = 0)
      : batch_bytes_(batch_bytes), max_bytes_(max_bytes), header_bytes_(header_bytes) {}

  // The bytes an entry of a message of message_bytes takes in a batch.
  static size_t EntryBytes(size_t message_bytes);

  // Room for a message of message_bytes at the end of the last batch (or of a
  // new one), its entry's tag and length already written: the caller writes
  // exactly message_bytes there before anything else touches the queue.
  // nullptr, with nothing queued, when the bound would be passed.
  char* Append(size_t message_bytes);

  // The next batch to write (its header's room first, then its entries), if
  // none is being written and one waits. The writer may fill the header in,
  // or swap the string with a buffer of its own (which the queue then keeps
  // for a later batch). Finish it with Written() once its write completed.
  std::string* Next();
  void Written();

  bool writing() const { return writing_; }
  size_t queued_bytes() const { return queued_bytes_; }
  bool empty() const { return batches_.empty(); }

 private:
  const size_t batch_bytes_;
  const size_t max_bytes_;
  const size_t header_bytes_;
  std::deque<std::string> batches_;
  std::string current_;  // the batch being written (or what the writer swapped in)
  size_t current_bytes_ = 0;  // its entries' bytes, as counted in queued_bytes_
  // A written batch's buffer, kept for the next batch: a busy stream does not
  // allocate one a write.
  std::string spare_;
  size_t queued_bytes_ = 0;  // including the batch being written
  bool writing_ = false;
};

}  // namespace relay::common
