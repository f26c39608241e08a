#pragma once

// Feeds a fuzzer's bytes to a link's reader as a socket would: in pieces
// whose sizes the first byte chooses, each whole frame handed to on_frame
// until the reader finds an error (then the link would end).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "absl/strings/string_view.h"
#include "common/link/link_frame.h"

namespace relay::fuzz {

template <typename OnFrame>
void FeedLink(const uint8_t* data, size_t size, OnFrame&& on_frame) {
  if (size == 0) {
    return;
  }
  const size_t piece = 1 + data[0] % 97;
  ++data;
  --size;
  // A small bound, so that a header's word cannot make the fuzzer hold 64 MiB.
  common::LinkFrameReader reader(64 << 10);
  for (size_t at = 0; at < size;) {
    const size_t n = std::min(piece, size - at);
    absl::Span<char> room = reader.Prepare(n);
    std::memcpy(room.data(), data + at, n);
    reader.Commit(n);
    at += n;
    for (;;) {
      absl::string_view frame;
      common::LinkControl control;
      absl::StatusOr<bool> next = reader.Next(frame, &control);
      if (!next.ok()) {
        return;  // the link ends here
      }
      if (!*next) {
        break;
      }
      if (control == common::LinkControl::kNone) {
        on_frame(frame);
      }
    }
  }
}

}  // namespace relay::fuzz
