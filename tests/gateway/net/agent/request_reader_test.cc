#include "gateway/net/agent/request_reader.h"

#include <chrono>
#include <memory>
#include <optional>
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
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

// Records what the reader says, and reads each POST's body as HttpSession does once its bearer
// is admitted.
class RecordingOwner : public ReaderOwner {
 public:
  std::shared_ptr<void> KeepAlive() override { return alive_; }
  void OnHeader() override {
    events.push_back("header " + std::string(reader->parser().get().target()));
    if (reader->parser().get().method() == beast::http::verb::post) {
      reader->ReadBody(body_limit, reader->ContentLength());
    }
  }
  void OnBody() override { events.push_back("body " + reader->parser().get().body()); }
  void OnHeaderTooLarge() override { events.push_back("431"); }
  void OnBodyTooLarge() override { events.push_back("413"); }
  void OnPeerGone() override { events.push_back("gone"); }

  // How many hold the owner: this one, and each pending read or timer of the reader.
  long holders() const { return alive_.use_count(); }

  RequestReader* reader = nullptr;
  uint64_t body_limit = 1 << 20;
  std::vector<std::string> events;

 private:
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

std::string Post(const std::string& target, const std::string& body) {
  return "POST " + target + " HTTP/1.1\r\nHost: relay\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

using relay::testing::RunUntil;

struct Connection {
  explicit Connection(std::chrono::milliseconds idle = std::chrono::seconds(10))
      : acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)), client(io) {
    client.connect(acceptor.local_endpoint());
    tcp::socket accepted(io);
    acceptor.accept(accepted);
    server.emplace(std::move(accepted));
    reader.emplace(*server, owner, RequestReader::Timeouts{std::chrono::seconds(10), idle});
    owner.reader = &*reader;
  }
  ~Connection() {
    reader.reset();
    server.reset();
  }

  // The first request of a connection, which is read after a wait for its bytes.
  void FirstRequest() {
    reader->ReadNext();
    asio::write(client, asio::buffer(Post("/first", "{}")));
    ASSERT_TRUE(RunUntil(io, [&] { return owner.events.size() == 2; }));
    owner.events.clear();
  }

  asio::io_context io;
  tcp::acceptor acceptor;
  tcp::socket client;
  std::optional<beast::tcp_stream> server;
  RecordingOwner owner;
  std::optional<RequestReader> reader;
};

// The common case on a kept-alive connection: the request's header and body come in one read.
// Both go on from the read's own handler, not one loop turn later each (each turn cost an
// empty poll of the reactor, a system call, at every call).
TEST(RequestReader, HeaderAndBodyReadTogetherGoOnInTheReadsTurn) {
  Connection c;
  c.FirstRequest();
  c.reader->ReadNext();
  asio::write(c.client, asio::buffer(Post("/mcp", R"({"jsonrpc":"2.0"})")));
  // One handler at a time: the one that completes the read must deliver both.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (c.owner.events.empty() && std::chrono::steady_clock::now() < deadline) {
    c.io.restart();
    c.io.run_one_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(c.owner.events,
            (std::vector<std::string>{"header /mcp", R"(body {"jsonrpc":"2.0"})"}));
}

// Each request on a kept-alive connection is one handler: the read's. The wait for the
// request's first bytes has a deadline, but its timer is not armed and cancelled at each call
// (the cancelled wait was a handler of its own, a loop turn later, and an allocation).
TEST(RequestReader, KeptAliveRequestsRunOneHandlerEach) {
  Connection c;
  c.FirstRequest();
  c.io.restart();
  c.io.poll();
  for (int request = 0; request < 3; ++request) {
    c.reader->ReadNext();
    asio::write(c.client, asio::buffer(Post("/mcp", "{}")));
    int handlers = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (c.owner.events.size() < 2 && std::chrono::steady_clock::now() < deadline) {
      c.io.restart();
      handlers += static_cast<int>(c.io.run_one_for(std::chrono::milliseconds(100)));
    }
    c.io.restart();
    handlers += static_cast<int>(c.io.poll());
    EXPECT_EQ(c.owner.events, (std::vector<std::string>{"header /mcp", "body {}"}));
    EXPECT_EQ(handlers, 1) << "request " << request;
    c.owner.events.clear();
  }
}

// The deadline still holds: a connection that keeps sending requests, each well within
// --idle_timeout, is kept past it; one left idle is let go once it passes.
TEST(RequestReader, IdleDeadlineMovesWithEachRequest) {
  constexpr auto kIdle = std::chrono::milliseconds(1000);
  Connection c(kIdle);
  c.FirstRequest();
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < 2 * kIdle) {
    c.reader->ReadNext();
    c.io.restart();
    c.io.run_for(kIdle / 5);  // the agent thinks a while
    ASSERT_TRUE(c.owner.events.empty()) << c.owner.events.front();
    asio::write(c.client, asio::buffer(Post("/mcp", "{}")));
    ASSERT_TRUE(RunUntil(c.io, [&] { return c.owner.events.size() == 2; }));
    c.owner.events.clear();
  }
  const auto idle_from = std::chrono::steady_clock::now();
  c.reader->ReadNext();
  ASSERT_TRUE(RunUntil(c.io, [&] { return !c.owner.events.empty(); }));
  EXPECT_EQ(c.owner.events, std::vector<std::string>{"gone"});
  EXPECT_GE(std::chrono::steady_clock::now() - idle_from, kIdle);
  EXPECT_FALSE(c.reader->TimedOut());  // a kept-alive connection's idle end is no timeout
}

// A connection handed over (a tab's WebSocket, a GET stream) leaves the reader right after the
// header: the wait's timer, armed for the header's deadline, must not hold the session (and so
// its new owner's slot and memory) until that deadline passes.
TEST(RequestReader, StopWaitingLetsTheOwnerGoAtOnce) {
  Connection c;
  c.reader->ReadNext();
  asio::write(c.client, asio::buffer(std::string("GET /ws HTTP/1.1\r\nHost: relay\r\n\r\n")));
  ASSERT_TRUE(RunUntil(c.io, [&] { return !c.owner.events.empty(); }));
  EXPECT_EQ(c.owner.events, std::vector<std::string>{"header /ws"});
  ASSERT_GT(c.owner.holders(), 1);  // the timer's handler
  c.reader->StopWaiting();
  c.io.restart();
  c.io.poll();
  EXPECT_EQ(c.owner.holders(), 1);
}

// A body that comes after its header is waited for.
TEST(RequestReader, BodyThatComesLaterIsReadWhenItComes) {
  Connection c;
  c.FirstRequest();
  c.reader->ReadNext();
  const std::string request = Post("/mcp", "0123456789");
  asio::write(c.client, asio::buffer(request.substr(0, request.size() - 4)));
  ASSERT_TRUE(RunUntil(c.io, [&] { return !c.owner.events.empty(); }));
  for (int i = 0; i < 10; ++i) {
    c.io.restart();
    c.io.poll();
  }
  EXPECT_EQ(c.owner.events, std::vector<std::string>{"header /mcp"});
  asio::write(c.client, asio::buffer(request.substr(request.size() - 4)));
  ASSERT_TRUE(RunUntil(c.io, [&] { return c.owner.events.size() == 2; }));
  EXPECT_EQ(c.owner.events[1], "body 0123456789");
}

// A chunked body over the limit, all in the same read as its header, is refused (413), and
// one that is not chunked encoding at all ends the connection, as when read by Beast.
TEST(RequestReader, BadBodyInTheSameReadIsRefused) {
  Connection c;
  c.owner.body_limit = 10;
  c.FirstRequest();
  c.reader->ReadNext();
  asio::write(c.client, asio::buffer(std::string("POST /big HTTP/1.1\r\nHost: relay\r\n"
                                                 "Transfer-Encoding: chunked\r\n\r\n"
                                                 "20\r\n") +
                                     std::string(32, 'x') + "\r\n0\r\n\r\n"));
  ASSERT_TRUE(RunUntil(c.io, [&] { return c.owner.events.size() == 2; }));
  EXPECT_EQ(c.owner.events, (std::vector<std::string>{"header /big", "413"}));

  Connection d;
  d.FirstRequest();
  d.reader->ReadNext();
  asio::write(d.client, asio::buffer(std::string("POST /bad HTTP/1.1\r\nHost: relay\r\n"
                                                 "Transfer-Encoding: chunked\r\n\r\n"
                                                 "zz\r\n")));
  ASSERT_TRUE(RunUntil(d.io, [&] { return d.owner.events.size() == 2; }));
  EXPECT_EQ(d.owner.events, (std::vector<std::string>{"header /bad", "gone"}));
}

// Requests sent ahead in the same read are each read in turn, after the one before.
TEST(RequestReader, RequestsSentAheadAreReadInOrder) {
  Connection c;
  c.FirstRequest();
  c.reader->ReadNext();
  asio::write(c.client, asio::buffer(Post("/a", "1") + Post("/b", "22") + Post("/c", "333")));
  ASSERT_TRUE(RunUntil(c.io, [&] { return c.owner.events.size() == 2; }));
  c.reader->ReadNext();
  ASSERT_TRUE(RunUntil(c.io, [&] { return c.owner.events.size() == 4; }));
  c.reader->ReadNext();
  ASSERT_TRUE(RunUntil(c.io, [&] { return c.owner.events.size() == 6; }));
  EXPECT_EQ(c.owner.events, (std::vector<std::string>{"header /a", "body 1", "header /b",
                                                      "body 22", "header /c", "body 333"}));
}

// A header over the limit (16 KiB) is refused with 431 however it arrives.
TEST(RequestReader, HeaderOverTheLimitIsRefused) {
  Connection c;
  c.FirstRequest();
  c.reader->ReadNext();
  asio::write(c.client, asio::buffer("GET /mcp HTTP/1.1\r\nX-Long: " + std::string(20000, 'x') +
                                     "\r\n\r\n"));
  ASSERT_TRUE(RunUntil(c.io, [&] { return !c.owner.events.empty(); }));
  EXPECT_EQ(c.owner.events, std::vector<std::string>{"431"});
}

}  // namespace
}  // namespace relay::gateway
