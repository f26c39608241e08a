#include "gateway/core/ws_frame.h"

#include <cstdint>

namespace relay::gateway {

std::string TextFrameHeader(size_t payload_length) {
  std::string header;
  header.push_back(static_cast<char>(0x81));  // FIN, opcode 1 (text)
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

}  // namespace relay::gateway
