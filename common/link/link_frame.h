#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace relay::common {

// The links between gateways and router shards carry frames: a 4-byte
// big-endian length, then that many bytes (one serialised batch). Plain C++,
// no sockets.
inline constexpr size_t kLinkFrameHeaderBytes = 4;
// A batch may hold a 16 MiB tab message (re-serialised) beside others; a frame
// beyond this ends the link (the peer is not one of ours, or is broken).
inline constexpr size_t kMaxLinkFrameBytes = 64 << 20;

// Control frames keep the link's liveness (ARCHITECTURE.md "Faults"): a
// header with the top bit set and no body. A ping is answered with a pong by
// the peer's link itself, after the frames before it: a peer whose process
// has stopped (its kernel still acknowledging) answers nothing.
enum class LinkControl : uint8_t { kNone = 0, kPing = 1, kPong = 2 };
inline constexpr uint32_t kLinkControlBit = 0x80000000u;

// Appends the header of a frame of `length` bytes to out.
void AppendLinkFrameHeader(size_t length, std::string& out);
// Writes that header at `at` (kLinkFrameHeaderBytes).
void WriteLinkFrameHeader(size_t length, char* at);
// Appends a control frame.
void AppendLinkControl(LinkControl control, std::string& out);

// Cuts the bytes read from a link into frames. Read into Prepare(), Commit()
// what arrived, then take frames with Next() until it returns false; a frame
// stays valid until the next Prepare().
class LinkFrameReader {
 public:
  explicit LinkFrameReader(size_t max_frame = kMaxLinkFrameBytes) : max_frame_(max_frame) {}

  // Room for at least min_bytes more (the frame being read may ask for more).
  absl::Span<char> Prepare(size_t min_bytes = 64 << 10);
  void Commit(size_t bytes) { end_ += bytes; }
  // The next whole frame, if one has arrived; an error if a frame announces
  // more than max_frame bytes (nothing more can be read from that link), or
  // is a control frame this side does not know. A control frame comes back
  // in *control (empty frame); without control, one is an error.
  absl::StatusOr<bool> Next(absl::string_view& frame, LinkControl* control = nullptr);
  // Bytes held (buffered, whether framed or not).
  size_t capacity() const { return buffer_.size(); }

 private:
  const size_t max_frame_;
  std::vector<char> buffer_;
  size_t begin_ = 0;  // the first byte not yet taken as a frame
  size_t end_ = 0;    // the end of what was read
  size_t want_ = 0;   // the bytes the frame at begin_ needs in all (0: unknown)
};

}  // namespace relay::common
