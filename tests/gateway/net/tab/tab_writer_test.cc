#include "gateway/net/tab/tab_writer.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace relay::gateway {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

class FakeOwner : public TabWriter::Owner {
 public:
  std::shared_ptr<void> KeepAlive() override { return alive_; }
  void OnTabWriterDone() override { done_ = true; }
  bool done() const { return done_; }

 private:
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
  bool done_ = false;
};

// Messages queued while a write is in flight (a large message the tab has not read yet) leave
// intact and in order. The write gathers the queue's entries; frame headers are short strings
// whose bytes live inside the string, so the queue's storage must not move under the write.
// (The sanitizer pass of the test command runs this test too.)
TEST(TabWriter, MessagesQueuedDuringAWriteLeaveIntactAndInOrder) {
  constexpr int kQueuedDuringWrite = 300;
  const std::string big(8 << 20, 'x');  // more than the loopback socket takes at once

  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const unsigned short port = acceptor.local_endpoint().port();
  absl::Notification queued;
  std::vector<std::string> received;
  std::thread tab([&] {
    asio::io_context tab_io;
    websocket::stream<tcp::socket> ws(tab_io);
    ws.next_layer().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    ws.handshake("127.0.0.1", "/");
    queued.WaitForNotification();  // read nothing until everything is queued
    for (int i = 0; i < kQueuedDuringWrite + 2; ++i) {
      beast::flat_buffer buffer;
      ws.read(buffer);
      received.push_back(beast::buffers_to_string(buffer.data()));
    }
  });

  TabStream ws(beast::tcp_stream(acceptor.accept()));
  FakeOwner owner;
  TabWriter writer(ws, owner, 64 << 20);
  ws.async_accept([&](beast::error_code ec) {
    ASSERT_FALSE(ec) << ec.message();
    writer.Send(big);
    writer.Send("b");
    // After the write of these two started, and before the tab read any of it.
    asio::post(io, [&] {
      for (int i = 0; i < kQueuedDuringWrite; ++i) {
        writer.Send("m" + std::to_string(i));
      }
      queued.Notify();
    });
  });
  io.run();  // until every write is done
  tab.join();

  ASSERT_EQ(received.size(), static_cast<size_t>(kQueuedDuringWrite + 2));
  EXPECT_EQ(received[0].size(), big.size());
  EXPECT_EQ(received[0], big);
  EXPECT_EQ(received[1], "b");
  for (int i = 0; i < kQueuedDuringWrite; ++i) {
    ASSERT_EQ(received[i + 2], "m" + std::to_string(i));
  }
  EXPECT_FALSE(owner.done());
}

}  // namespace
}  // namespace relay::gateway
