#pragma once

#include <cstddef>

#include <google/protobuf/arena.h>

namespace relay::common {

// A protobuf arena whose first block is part of it, and stays when the arena
// is reset: the messages built on it, their sub-messages and the heads of
// their strings cost no allocation each (the bytes of a string moved in are
// not copied) until they pass kBytes, after which it allocates like any arena.
// For messages that live no longer than one frame: parsed from one and handed
// on (LinkFrameParser, reset after each frame), or built, queued on a link
// (which serialises them at once) and dropped, on the stack of the function
// that sends them or reset after each entry point (RouterHub). Not
// thread-safe.
template <size_t kBytes>
class FrameArena {
 public:
  FrameArena() : arena_(Options(block_)) {}
  FrameArena(const FrameArena&) = delete;
  FrameArena& operator=(const FrameArena&) = delete;

  // A new message of type M on the arena, valid until the arena is reset or goes.
  template <typename M>
  M& Make() {
    return *google::protobuf::Arena::CreateMessage<M>(&arena_);
  }
  google::protobuf::Arena* arena() { return &arena_; }
  // Drops every message on the arena and gives back every block but the first.
  void Reset() { arena_.Reset(); }

 private:
  static google::protobuf::ArenaOptions Options(char* block) {
    google::protobuf::ArenaOptions options;
    options.initial_block = block;
    options.initial_block_size = kBytes;
    return options;
  }

  alignas(16) char block_[kBytes];  // before arena_, which uses it
  google::protobuf::Arena arena_;
};

}  // namespace relay::common
