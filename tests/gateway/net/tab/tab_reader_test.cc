#include "gateway/net/tab/tab_reader.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include "gtest/gtest.h"
#include "testing/run_until.h"

namespace relay::gateway {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

// A masked frame, as a browser sends it.
std::string ClientFrame(uint8_t opcode, const std::string& payload) {
  std::string frame;
  frame += static_cast<char>(0x80 | opcode);
  const uint8_t mask[4] = {0x12, 0x34, 0x56, 0x78};
  if (payload.size() < 126) {
    frame += static_cast<char>(0x80 | payload.size());
  } else if (payload.size() < 65536) {
    frame += static_cast<char>(0x80 | 126);
    frame += static_cast<char>(payload.size() >> 8);
    frame += static_cast<char>(payload.size() & 0xff);
  } else {
    frame += static_cast<char>(0x80 | 127);
    for (int shift = 56; shift >= 0; shift -= 8) {
      frame += static_cast<char>((static_cast<uint64_t>(payload.size()) >> shift) & 0xff);
    }
  }
  frame.append(reinterpret_cast<const char*>(mask), 4);
  for (size_t i = 0; i < payload.size(); ++i) {
    frame += static_cast<char>(payload[i] ^ mask[i % 4]);
  }
  return frame;
}

class RecordingOwner : public TabReader::Owner {
 public:
  std::shared_ptr<void> KeepAlive() override { return alive_; }
  void OnTabReadEnded(boost::system::error_code ec) override { ended = ec; }
  void OnWsText(std::string text) override { texts.push_back(std::move(text)); }
  void OnWsPing(absl::string_view) override {
    ++pings;
    if (reader != nullptr) {
      reader->Hold();  // as TabSession does until the pong is written
    }
  }
  void OnWsClose(uint16_t, absl::string_view) override {}
  void OnWsFailure(WsFailure, absl::string_view) override {}

  TabReader* reader = nullptr;
  std::vector<std::string> texts;
  int pings = 0;
  std::optional<boost::system::error_code> ended;

 private:
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

using relay::testing::RunUntil;

struct Pair {
  Pair() : acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)), server(io), client(io) {
    client.connect(acceptor.local_endpoint());
    acceptor.accept(server);
  }
  asio::io_context io;
  tcp::acceptor acceptor;
  tcp::socket server;
  tcp::socket client;
};

// A held reader reads nothing; once resumed it reads what came meanwhile, though no new byte
// arrives after (the readiness was reported while it was held, and nothing waited for it).
TEST(TabReader, ResumingReadsWhatCameWhileHeld) {
  Pair pair;
  RecordingOwner owner;
  TabReader reader(pair.server, owner, 1 << 20);
  owner.reader = &reader;
  reader.Start();
  asio::write(pair.client, asio::buffer(ClientFrame(0x9, "ping")));
  ASSERT_TRUE(RunUntil(pair.io, [&] { return owner.pings == 1; }));

  asio::write(pair.client, asio::buffer(ClientFrame(0x1, "after the ping")));
  // The readiness is reported (and dropped: nothing waits) while the reader is held.
  ASSERT_TRUE(RunUntil(pair.io, [&] { return pair.server.available() > 0; }));
  for (int i = 0; i < 10; ++i) {
    pair.io.restart();
    pair.io.poll();
  }
  EXPECT_TRUE(owner.texts.empty());

  reader.Resume();
  ASSERT_TRUE(RunUntil(pair.io, [&] { return !owner.texts.empty(); }));
  EXPECT_EQ(owner.texts, std::vector<std::string>{"after the ping"});
}

// More than one wake-up's reads already waiting in the socket, and nothing after them: the
// reader takes them all without waiting for new bytes.
TEST(TabReader, ReadsEverythingWaitingBeyondOneWake) {
  Pair pair;
  // Room in the kernel for the whole message before anything is read.
  pair.server.set_option(asio::socket_base::receive_buffer_size(4 << 20));
  pair.client.set_option(asio::socket_base::send_buffer_size(4 << 20));
  RecordingOwner owner;
  TabReader reader(pair.server, owner, 4 << 20);
  const std::string message(400 * 1024, 'x');
  const std::string frame = ClientFrame(0x1, message);
  // Written in pieces as the kernel takes them, with the reader not yet started.
  size_t sent = 0;
  pair.client.non_blocking(true);
  boost::system::error_code ec;
  while (sent < frame.size()) {
    sent += pair.client.write_some(asio::buffer(frame.data() + sent, frame.size() - sent), ec);
    if (ec == asio::error::would_block) {
      break;
    }
    ASSERT_FALSE(ec) << ec.message();
  }
  reader.Start();
  pair.client.non_blocking(false);
  asio::write(pair.client, asio::buffer(frame.data() + sent, frame.size() - sent));
  ASSERT_TRUE(RunUntil(pair.io, [&] { return !owner.texts.empty(); }))
      << "read " << (sent >> 10) << " KiB written before the reader started";
  EXPECT_EQ(owner.texts.front().size(), message.size());
}

}  // namespace
}  // namespace relay::gateway
