#include "gateway/net/gathered_buffers.h"

#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "common/fifo.h"

namespace relay::gateway {
namespace {

namespace asio = boost::asio;

// What a gathered write of the sequence would send, and whether it came as a
// vector (two allocations a write) or by value.
struct Seen {
  std::string bytes;
  bool vector = false;
};

// Not inlined: GCC would see a one-string vector meet the two-string branch
// and warn of bounds that branch never passes.
template <typename Strings>
[[gnu::noinline]] Seen Gather(const Strings& strings) {
  Seen seen;
  WithGatheredBuffers(strings, [&](const auto& buffers) {
    using Sequence = std::decay_t<decltype(buffers)>;
    seen.vector = std::is_same_v<Sequence, std::vector<asio::const_buffer>>;
    seen.bytes.resize(asio::buffer_size(buffers));
    asio::buffer_copy(asio::buffer(seen.bytes), buffers);
  });
  return seen;
}

TEST(GatheredBuffersTest, OneOrTwoStringsGoWithoutAVector) {
  std::vector<std::string> answer = {"HTTP/1.1 200 OK\r\n\r\n"};
  Seen one = Gather(answer);
  EXPECT_EQ(one.bytes, "HTTP/1.1 200 OK\r\n\r\n");
  EXPECT_FALSE(one.vector);

  // A WebSocket frame: its header and its text.
  common::Fifo<std::string> frame;
  frame.push_back(std::string("\x81\x05", 2));
  frame.push_back("hello");
  Seen two = Gather(frame);
  EXPECT_EQ(two.bytes, std::string("\x81\x05hello", 7));
  EXPECT_FALSE(two.vector);
}

TEST(GatheredBuffersTest, MoreStringsGoInOrder) {
  common::Fifo<std::string> entries;
  std::string expected;
  for (int i = 0; i < 5; ++i) {
    entries.push_back(std::string(100 + i, static_cast<char>('a' + i)));
    expected += entries[i];
  }
  Seen five = Gather(entries);
  EXPECT_EQ(five.bytes, expected);
  EXPECT_TRUE(five.vector);
}

}  // namespace
}  // namespace relay::gateway
