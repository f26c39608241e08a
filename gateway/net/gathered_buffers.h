#pragma once

#include <array>
#include <cstddef>
#include <vector>

#include <boost/asio/buffer.hpp>

namespace relay::gateway {

// Calls write with strings (a container of std::string with size() and [])
// as one buffer sequence for a gathered write. Asio keeps a copy of a write's
// buffer sequence in the operation: a vector would cost two allocations a
// write (ours and Asio's copy), so one string goes as a single buffer and two
// (a WebSocket frame's header and text) as an array held by value; only a
// write of more takes a vector. write takes the sequence by const reference.
template <typename Strings, typename Write>
void WithGatheredBuffers(const Strings& strings, Write&& write) {
  namespace asio = boost::asio;
  if (strings.size() == 1) {
    return write(asio::const_buffer(asio::buffer(strings[0])));
  }
  if (strings.size() == 2) {
    return write(std::array<asio::const_buffer, 2>{asio::buffer(strings[0]),
                                                   asio::buffer(strings[1])});
  }
  std::vector<asio::const_buffer> buffers;
  buffers.reserve(strings.size());
  for (size_t i = 0; i < strings.size(); ++i) {
    buffers.push_back(asio::buffer(strings[i]));
  }
  write(buffers);
}

}  // namespace relay::gateway
