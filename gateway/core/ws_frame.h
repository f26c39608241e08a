#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace relay::gateway {

// A tab's WebSocket without a library under it (RFC 6455, server side, no
// extensions): the frames the gateway writes, and a reader of the frames a
// tab sends. An idle tab then holds a few dozen bytes of WebSocket state
// rather than Beast's 3 KiB stream (docs/decisions.md, "A tab's WebSocket is
// our own"). Plain C++: the tab's session feeds the reader what it read.

// Whether key is a Sec-WebSocket-Key a client may send (§4.1): 16 bytes in
// base64, 24 characters.
bool IsWsKey(absl::string_view key);
// The Sec-WebSocket-Accept that answers key (§4.2.2): base64 of the SHA-1 of
// the key and the protocol's GUID (OpenSSL).
std::string WsAccept(absl::string_view key);
// The whole 101 answer to a tab's upgrade with key.
std::string WsUpgradeAnswer(absl::string_view key);

// The header of one unmasked, unfragmented text frame from server to client
// (§5.2): what goes before a message the gateway writes to a tab.
std::string TextFrameHeader(size_t payload_length);
// A whole pong frame answering a ping's payload (at most 125 bytes, §5.5).
std::string PongFrame(absl::string_view payload);
// A whole ping frame with no payload (the keep-alive).
std::string PingFrame();
// A whole close frame (§5.5.1): code 0 sends none; the reason is cut to what fits 125 bytes.
std::string CloseFrame(uint16_t code, absl::string_view reason);

// Whether a peer may send code in a close frame (§7.4).
bool IsValidCloseCode(uint16_t code);

// Why the reader stopped before the peer closed.
enum class WsFailure {
  kProtocol,  // a frame the protocol forbids: close with 1002
  kBadUtf8,   // a text message that is not UTF-8: close with 1007
  kBinary,    // a binary message, which the tab protocol has none of
  kTooBig,    // a message over the limit
};

// The frames a client sends, read incrementally: masked, a text message in
// fragments with control frames between them, nothing reserved set. A
// message's payload is unmasked into the message as it arrives, never held
// twice.
class WsFrameReader {
 public:
  class Visitor {
   public:
    virtual ~Visitor() = default;
    // A whole text message, valid UTF-8, at most the limit.
    virtual void OnWsText(std::string text) = 0;
    // A ping; its pong is the visitor's to send.
    virtual void OnWsPing(absl::string_view payload) = 0;
    // The peer's close frame (code 0: it named none). Nothing is read after it.
    virtual void OnWsClose(uint16_t code, absl::string_view reason) = 0;
    // Nothing is read after a failure.
    virtual void OnWsFailure(WsFailure failure, absl::string_view why) = 0;
  };

  explicit WsFrameReader(size_t limit) : limit_(limit) {}

  // The largest message; a change applies from the next message on.
  void set_limit(size_t limit) { limit_ = limit; }
  // Reads data through the visitor, until its end or the first close or
  // failure (done() from then on; what follows is ignored).
  void Feed(absl::string_view data, Visitor& visitor);
  bool done() const { return done_; }

 private:
  // Reads the header once all of it is in header_; false (and the visitor
  // told) when it is not allowed.
  bool StartFrame(Visitor& visitor);
  void EndFrame(Visitor& visitor);
  void Fail(Visitor& visitor, WsFailure failure, absl::string_view why);
  // Appends payload bytes, unmasked, to out.
  void Unmask(absl::string_view data, std::string& out);

  size_t limit_;
  bool done_ = false;
  // The frame being read.
  uint8_t header_[14];
  uint8_t header_size_ = 0;
  bool in_payload_ = false;
  bool fin_ = false;
  uint8_t opcode_ = 0;
  uint8_t mask_[4] = {0, 0, 0, 0};
  uint8_t mask_at_ = 0;  // where in the mask the next payload byte is
  uint64_t remaining_ = 0;
  // A text message whose last fragment has not come yet.
  bool in_message_ = false;
  std::string message_;
  std::string control_;  // a control frame's payload (at most 125 bytes)
};

}  // namespace relay::gateway
