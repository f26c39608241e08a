#pragma once

#include <cstddef>
#include <string>

namespace relay::gateway {

// The header of one unmasked, unfragmented text frame from server to client
// (RFC 6455 §5.2): what goes before a message the gateway writes to a tab.
// Plain C++.
std::string TextFrameHeader(size_t payload_length);

}  // namespace relay::gateway
