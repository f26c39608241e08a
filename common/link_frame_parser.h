#pragma once

#include <memory>

#include <google/protobuf/arena.h>

#include "absl/strings/string_view.h"

namespace relay::common {

// Parses a link's frames, one at a time, into an arena that is reset for the
// next: the messages and strings of a batch cost no allocation each (a long
// string's bytes still do), where a reused message freed and remade every
// event of a oneof. The arena keeps its first block across frames. Plain C++,
// no sockets; one per link, on the link's thread.
template <typename Batch>
class LinkFrameParser {
 public:
  LinkFrameParser() : block_(new char[kBlockBytes]), arena_(Options(block_.get())) {}
  LinkFrameParser(const LinkFrameParser&) = delete;
  LinkFrameParser& operator=(const LinkFrameParser&) = delete;

  // The frame's batch, valid until the next Parse; null when the frame is
  // not one.
  Batch* Parse(absl::string_view frame) {
    arena_.Reset();
    Batch* batch = google::protobuf::Arena::CreateMessage<Batch>(&arena_);
    return batch->ParseFromArray(frame.data(), static_cast<int>(frame.size())) ? batch : nullptr;
  }

 private:
  // Room for the events of a busy frame (a few hundred calls).
  static constexpr size_t kBlockBytes = 32 << 10;

  static google::protobuf::ArenaOptions Options(char* block) {
    google::protobuf::ArenaOptions options;
    options.initial_block = block;
    options.initial_block_size = kBlockBytes;
    return options;
  }

  std::unique_ptr<char[]> block_;  // before arena_, which uses it
  google::protobuf::Arena arena_;
};

}  // namespace relay::common
