#pragma once

#include <cstddef>

#include "absl/strings/string_view.h"
#include "common/link/frame_arena.h"

namespace relay::common {

// Parses a link's frames, one at a time, into an arena that is reset after
// each: the messages and strings of a batch cost no allocation each (a long
// string's bytes still do), where a reused message freed and remade every
// event of a oneof. The arena keeps its first block across frames. Plain C++,
// no sockets; one per link, on the link's thread.
template <typename Batch>
class LinkFrameParser {
 public:
  LinkFrameParser() = default;
  LinkFrameParser(const LinkFrameParser&) = delete;
  LinkFrameParser& operator=(const LinkFrameParser&) = delete;

  // Parses frame and hands its batch to handle, which must keep nothing of it
  // (moving a string out is fine): the arena is reset as soon as handle
  // returns, so that a large frame's memory is given back at once. False,
  // without calling handle, when the frame is not a Batch.
  template <typename Handle>
  bool Parse(absl::string_view frame, Handle&& handle) {
    Batch& batch = arena_.template Make<Batch>();
    const bool parsed = batch.ParseFromArray(frame.data(), static_cast<int>(frame.size()));
    if (parsed) {
      handle(batch);
    }
    arena_.Reset();
    return parsed;
  }

 private:
  // Room for the events of a busy frame (a few hundred calls).
  static constexpr size_t kBlockBytes = 32 << 10;

  FrameArena<kBlockBytes> arena_;
};

}  // namespace relay::common
