#include "common/batch_queue.h"

#include <utility>

namespace relay::common {

namespace {

// Field 1, length-delimited: (1 << 3) | 2.
constexpr char kEntryTag = 0x0a;
// A written batch's buffer is kept for the next one up to this size, so that
// a batch once large does not hold its memory for ever.
constexpr size_t kKeepBytes = 64 << 10;

size_t VarintBytes(size_t value) {
  size_t bytes = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++bytes;
  }
  return bytes;
}

char* WriteVarint(size_t value, char* at) {
  while (value >= 0x80) {
    *at++ = static_cast<char>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  *at++ = static_cast<char>(value);
  return at;
}

}  // namespace

size_t BatchQueue::EntryBytes(size_t message_bytes) {
  return 1 + VarintBytes(message_bytes) + message_bytes;
}

char* BatchQueue::Append(size_t message_bytes) {
  const size_t bytes = EntryBytes(message_bytes);
  if (queued_bytes_ + bytes > max_bytes_) {
    return nullptr;
  }
  if (batches_.empty() || batches_.back().size() - header_bytes_ + bytes > batch_bytes_) {
    batches_.push_back(std::exchange(spare_, std::string()));
    batches_.back().assign(header_bytes_, '\0');
  }
  std::string& batch = batches_.back();
  const size_t at = batch.size();
  // (resize writes zeros the caller overwrites: a memset of the message's
  // size, cheaper than the serialising that follows.)
  batch.resize(at + bytes);
  queued_bytes_ += bytes;
  char* p = &batch[at];
  *p++ = kEntryTag;
  return WriteVarint(message_bytes, p);
}

std::string* BatchQueue::Next() {
  if (writing_ || batches_.empty()) {
    return nullptr;
  }
  writing_ = true;
  current_ = std::move(batches_.front());
  batches_.pop_front();
  current_bytes_ = current_.size() - header_bytes_;
  return &current_;
}

void BatchQueue::Written() {
  writing_ = false;
  queued_bytes_ -= current_bytes_;
  current_bytes_ = 0;
  current_.clear();
  if (current_.capacity() <= kKeepBytes) {
    spare_ = std::move(current_);
  }
  current_ = std::string();
}

}  // namespace relay::common
