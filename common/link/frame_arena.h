#pragma once

#include <cstddef>

#include <google/protobuf/arena.h>

namespace relay::common {

// An arena whose first block is inside it, for a message built, queued on a
// link (which serialises it at once) and dropped within one function: the
// message, its sub-messages and the heads of its strings cost no allocation
// (the bytes of a string moved in are not copied). Past kBytes it allocates
// like any arena. Lives on the stack; not thread-safe.
template <size_t kBytes>
class FrameArena {
 public:
  FrameArena() : arena_(Options(block_)) {}
  FrameArena(const FrameArena&) = delete;
  FrameArena& operator=(const FrameArena&) = delete;

  // A new message of type M on the arena, valid until the arena goes.
  template <typename M>
  M& Make() {
    return *google::protobuf::Arena::CreateMessage<M>(&arena_);
  }

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
