#pragma once

#include <memory>

#include <google/protobuf/arena.h>

#include "absl/strings/string_view.h"

namespace relay::common {

// Parses a link's frames, one at a time, into an arena that is reset after
// each: the messages and strings of a batch cost no allocation each (a long
// string's bytes still do), where a reused message freed and remade every
// event of a oneof. The arena keeps its first block across frames. Plain C++,
// no sockets; one per link, on the link's thread.
template <typename Batch>
class LinkFrameParser {
 public:
  LinkFrameParser() : block_(new char[kBlockBytes]), arena_(Options(block_.get())) {}
  LinkFrameParser(const LinkFrameParser&) = delete;
  LinkFrameParser& operator=(const LinkFrameParser&) = delete;

  // Parses frame and hands its batch to handle, which must keep nothing of it
  // (moving a string out is fine): the arena is reset as soon as handle
  // returns, so that a large frame's memory is given back at once. False,
  // without calling handle, when the frame is not a Batch.
  template <typename Handle>
  bool Parse(absl::string_view frame, Handle&& handle) {
    Batch* batch = google::protobuf::Arena::CreateMessage<Batch>(&arena_);
    const bool parsed = batch->ParseFromArray(frame.data(), static_cast<int>(frame.size()));
    if (parsed) {
      handle(*batch);
    }
    arena_.Reset();
    return parsed;
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
