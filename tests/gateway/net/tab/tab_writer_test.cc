#include "gateway/net/tab/tab_writer.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include "absl/synchronization/notification.h"
#include "gateway/core/ws_frame.h"
#include "gtest/gtest.h"

namespace relay::gateway {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

class FakeOwner : public TabWriter::Owner {
 public:
  std::shared_ptr<void> KeepAlive() override { return alive_; }
  void OnTabWriterDone() override { done_ = true; }
  void OnTabCloseSent() override { close_sent_ = true; }
  bool done() const { return done_; }
  bool close_sent() const { return close_sent_; }

 private:
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
  bool done_ = false;
  bool close_sent_ = false;
};

// Reads the client's upgrade request from socket and queues the answer: what TabSession does
// after the HTTP session read and checked the request.
void AcceptUpgrade(tcp::socket& socket, TabWriter& writer) {
  beast::flat_buffer buffer;
  http::request<http::empty_body> request;
  http::read(socket, buffer, request);
  ASSERT_EQ(buffer.size(), 0u);
  writer.SendRaw(WsUpgradeAnswer(std::string(request[http::field::sec_websocket_key])));
}

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

  tcp::socket socket = acceptor.accept();
  FakeOwner owner;
  TabWriter writer(socket, owner, 64 << 20);
  AcceptUpgrade(socket, writer);
  writer.Send(big);
  writer.Send("b");
  // After the write of these two started, and before the tab read any of it.
  asio::post(io, [&] {
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

// The close frame follows what was queued before it, carries the code and reason a client
// reads, and nothing queued after it is sent.
TEST(TabWriter, TheCloseFrameComesLastWithItsCode) {
  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const unsigned short port = acceptor.local_endpoint().port();
  std::vector<std::string> received;
  websocket::close_reason heard;
  beast::error_code ended;
  std::thread tab([&] {
    asio::io_context tab_io;
    websocket::stream<tcp::socket> ws(tab_io);
    ws.next_layer().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    ws.handshake("127.0.0.1", "/");
    for (;;) {
      beast::flat_buffer buffer;
      ws.read(buffer, ended);
      if (ended) {
        break;
      }
      received.push_back(beast::buffers_to_string(buffer.data()));
    }
    heard = ws.reason();
  });

  tcp::socket socket = acceptor.accept();
  FakeOwner owner;
  TabWriter writer(socket, owner, 64 << 20);
  AcceptUpgrade(socket, writer);
  writer.Send("first");
  writer.Send("second");
  writer.CloseWith(4409, "displaced by a newer tab");
  writer.Send("after the close");
  EXPECT_TRUE(writer.closing());
  io.run();  // until the close frame is written
  EXPECT_TRUE(owner.close_sent());
  // The tab answers with its close frame (TabSession waits for it before the teardown).
  char answer[64];
  EXPECT_GT(socket.read_some(asio::buffer(answer)), 0u);
  writer.Teardown();
  tab.join();

  EXPECT_EQ(received, (std::vector<std::string>{"first", "second"}));
  EXPECT_EQ(ended, websocket::error::closed);
  EXPECT_EQ(heard.code, 4409);
  EXPECT_EQ(std::string(heard.reason.data(), heard.reason.size()), "displaced by a newer tab");
}

}  // namespace
}  // namespace relay::gateway
