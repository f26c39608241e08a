#include "gateway/core/ws_frame.h"

#include <algorithm>
#include <cstring>

#include <openssl/evp.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/text.h"

namespace relay::gateway {

namespace {

constexpr uint8_t kContinuation = 0x0;
constexpr uint8_t kText = 0x1;
constexpr uint8_t kBinary = 0x2;
constexpr uint8_t kClose = 0x8;
constexpr uint8_t kPing = 0x9;
constexpr uint8_t kPong = 0xA;
constexpr size_t kMaxControlPayload = 125;
// A message's room grows with what arrives, not with what a header claims:
// a stranger's header could claim the whole limit and send nothing.
constexpr size_t kMaxReserve = 64 * 1024;

std::string ControlFrame(uint8_t opcode, absl::string_view payload) {
  std::string frame;
  frame.reserve(2 + payload.size());
  frame.push_back(static_cast<char>(0x80 | opcode));
  frame.push_back(static_cast<char>(payload.size()));
  frame.append(payload.data(), payload.size());
  return frame;
}

}  // namespace

bool IsWsKey(absl::string_view key) {
  if (key.size() != 24 || key.substr(22) != "==") {
    return false;
  }
  for (char c : key.substr(0, 22)) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '/') {
      return false;
    }
  }
  return true;
}

std::string WsAccept(absl::string_view key) {
  std::string keyed = absl::StrCat(key, "258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_size = 0;
  EVP_Digest(keyed.data(), keyed.size(), digest, &digest_size, EVP_sha1(), nullptr);
  unsigned char encoded[64];
  int encoded_size = EVP_EncodeBlock(encoded, digest, static_cast<int>(digest_size));
  return std::string(reinterpret_cast<const char*>(encoded), static_cast<size_t>(encoded_size));
}

std::string WsUpgradeAnswer(absl::string_view key) {
  return absl::StrCat(
      "HTTP/1.1 101 Switching Protocols\r\nServer: mcp-tab-relay\r\nUpgrade: websocket\r\n"
      "Connection: Upgrade\r\nSec-WebSocket-Accept: ",
      WsAccept(key), "\r\n\r\n");
}

std::string TextFrameHeader(size_t payload_length) {
  std::string header;
  header.push_back(static_cast<char>(0x80 | kText));  // FIN
  if (payload_length < 126) {
    header.push_back(static_cast<char>(payload_length));
  } else if (payload_length <= 0xffff) {
    header.push_back(static_cast<char>(126));
    header.push_back(static_cast<char>(payload_length >> 8));
    header.push_back(static_cast<char>(payload_length & 0xff));
  } else {
    header.push_back(static_cast<char>(127));
    for (int shift = 56; shift >= 0; shift -= 8) {
      header.push_back(static_cast<char>((static_cast<uint64_t>(payload_length) >> shift) & 0xff));
    }
  }
  return header;
}

std::string PongFrame(absl::string_view payload) {
  return ControlFrame(kPong, payload.substr(0, kMaxControlPayload));
}

std::string PingFrame() { return ControlFrame(kPing, ""); }

std::string CloseFrame(uint16_t code, absl::string_view reason) {
  if (code == 0) {
    return ControlFrame(kClose, "");
  }
  std::string payload;
  payload.push_back(static_cast<char>(code >> 8));
  payload.push_back(static_cast<char>(code & 0xff));
  payload += common::TruncateUtf8(reason, kMaxControlPayload - 2);
  return ControlFrame(kClose, payload);
}

bool IsValidCloseCode(uint16_t code) {
  // 1004 is reserved, 1005, 1006 and 1015 are never sent, 1012-1014 are
  // IANA-registered since the RFC; 3000-4999 are for libraries and
  // applications (the tab protocol's 44xx).
  return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) ||
         (code >= 3000 && code <= 4999);
}

void WsFrameReader::Feed(absl::string_view data, Visitor& visitor) {
  while (!data.empty() && !done_) {
    if (!in_payload_) {
      // The header: 2 bytes, then the length's 0, 2 or 8, then the 4-byte mask.
      size_t want = 2;
      if (header_size_ >= 2) {
        uint8_t length7 = header_[1] & 0x7f;
        want += (length7 == 126 ? 2 : length7 == 127 ? 8 : 0) + 4;
      }
      size_t take = std::min(want - header_size_, data.size());
      std::memcpy(header_ + header_size_, data.data(), take);
      header_size_ += take;
      data.remove_prefix(take);
      if (header_size_ == 2 && !(header_[1] & 0x80)) {
        return Fail(visitor, WsFailure::kProtocol, "a client's frame must be masked");
      }
      if (header_size_ < want || want == 2) {
        continue;  // the rest of the header is in what follows
      }
      if (!StartFrame(visitor)) {
        return;
      }
      if (remaining_ == 0) {
        EndFrame(visitor);
      }
      continue;
    }
    size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, data.size()));
    Unmask(data.substr(0, take), opcode_ >= kClose ? control_ : message_);
    data.remove_prefix(take);
    remaining_ -= take;
    if (remaining_ == 0) {
      EndFrame(visitor);
    }
  }
}

bool WsFrameReader::StartFrame(Visitor& visitor) {
  fin_ = header_[0] & 0x80;
  opcode_ = header_[0] & 0x0f;
  if (header_[0] & 0x70) {
    Fail(visitor, WsFailure::kProtocol, "reserved bits set (no extension was agreed)");
    return false;
  }
  uint8_t length7 = header_[1] & 0x7f;
  uint64_t length = length7;
  size_t at = 2;
  if (length7 == 126) {
    length = (uint64_t{header_[2]} << 8) | header_[3];
    at = 4;
  } else if (length7 == 127) {
    length = 0;
    for (at = 2; at < 10; ++at) {
      length = (length << 8) | header_[at];
    }
  }
  std::memcpy(mask_, header_ + at, 4);
  mask_at_ = 0;
  header_size_ = 0;
  // §5.2: the length in its shortest form, and the top bit of 8 bytes clear.
  if ((length7 == 126 && length < 126) || (length7 == 127 && (length <= 0xffff || length >> 63))) {
    Fail(visitor, WsFailure::kProtocol, "a frame length not in its shortest form");
    return false;
  }
  switch (opcode_) {
    case kClose:
    case kPing:
    case kPong:
      if (!fin_ || length > kMaxControlPayload) {
        Fail(visitor, WsFailure::kProtocol, "a control frame fragmented or over 125 bytes");
        return false;
      }
      control_.clear();
      break;
    case kText:
    case kContinuation:
      if ((opcode_ == kText) == in_message_) {
        Fail(visitor, WsFailure::kProtocol,
             in_message_ ? "a new message inside a fragmented one" : "a continuation of nothing");
        return false;
      }
      if (length > limit_ || message_.size() + length > limit_) {
        Fail(visitor, WsFailure::kTooBig, "message too big");
        return false;
      }
      if (message_.empty()) {
        message_.reserve(std::min<uint64_t>(length, kMaxReserve));
      }
      in_message_ = !fin_;
      break;
    case kBinary:
      Fail(visitor, WsFailure::kBinary, "binary messages are not supported");
      return false;
    default:
      Fail(visitor, WsFailure::kProtocol, "a reserved opcode");
      return false;
  }
  remaining_ = length;
  in_payload_ = true;
  return true;
}

void WsFrameReader::EndFrame(Visitor& visitor) {
  in_payload_ = false;
  switch (opcode_) {
    case kPing:
      visitor.OnWsPing(control_);
      return;
    case kPong:
      return;  // the keep-alive counts any bytes as a sign of life
    case kClose: {
      uint16_t code = 0;
      absl::string_view reason;
      if (control_.size() == 1) {
        return Fail(visitor, WsFailure::kProtocol, "a close frame with half a code");
      }
      if (control_.size() >= 2) {
        code = static_cast<uint16_t>((static_cast<uint8_t>(control_[0]) << 8) |
                                     static_cast<uint8_t>(control_[1]));
        reason = absl::string_view(control_).substr(2);
        if (!IsValidCloseCode(code)) {
          return Fail(visitor, WsFailure::kProtocol, "a close code no peer may send");
        }
        if (!common::IsValidUtf8(reason)) {
          return Fail(visitor, WsFailure::kBadUtf8, "a close reason that is not UTF-8");
        }
      }
      done_ = true;
      visitor.OnWsClose(code, reason);
      return;
    }
    default:
      break;
  }
  if (in_message_) {
    return;  // more fragments to come
  }
  if (!common::IsValidUtf8(message_)) {
    return Fail(visitor, WsFailure::kBadUtf8, "a text message that is not UTF-8");
  }
  std::string text = std::move(message_);
  message_ = std::string();  // a large message's room is not kept for the idle time after it
  visitor.OnWsText(std::move(text));
}

void WsFrameReader::Fail(Visitor& visitor, WsFailure failure, absl::string_view why) {
  done_ = true;
  message_ = std::string();
  visitor.OnWsFailure(failure, why);
}

void WsFrameReader::Unmask(absl::string_view data, std::string& out) {
  size_t at = out.size();
  out.resize(at + data.size());
  char* dst = out.data() + at;
  const char* src = data.data();
  size_t n = data.size();
  // Eight bytes at a time with the mask turned to where this payload is.
  uint8_t turned[8];
  for (int i = 0; i < 8; ++i) {
    turned[i] = mask_[(mask_at_ + i) & 3];
  }
  uint64_t wide;
  std::memcpy(&wide, turned, 8);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t word;
    std::memcpy(&word, src + i, 8);
    word ^= wide;
    std::memcpy(dst + i, &word, 8);
  }
  for (; i < n; ++i) {
    dst[i] = static_cast<char>(src[i] ^ turned[i & 7]);
  }
  mask_at_ = static_cast<uint8_t>((mask_at_ + n) & 3);
}

}  // namespace relay::gateway
