#include <chrono>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "gateway/net/agent/response_writer.h"
#include "gtest/gtest.h"
#include "testing/run_until.h"

namespace relay::gateway {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

using relay::testing::RunUntil;

// The gateway's side of a connection, held the way a session holds it: by its owner.
struct Connection {
  explicit Connection(asio::io_context& io) : socket(io) {}
  tcp::socket socket;
};

struct Pair {
  Pair() : acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)), client(io) {
    client.connect(acceptor.local_endpoint());
    server = std::make_shared<Connection>(io);
    acceptor.accept(server->socket);
  }
  asio::io_context io;
  tcp::acceptor acceptor;
  tcp::socket client;
  std::shared_ptr<Connection> server;
};

// An answer written while the client is still sending (a 413 before the whole body) reaches
// it whole, not cut by a reset; the connection ends once the client has closed.
TEST(CloseLingeringTest, AnAnswerReachesAClientThatIsStillSending) {
  Pair pair;
  const std::string answer = "HTTP/1.1 413 Payload Too Large\r\ncontent-length: 0\r\n\r\n";
  // The client's unread bytes sit in the gateway's receive buffer: closing now would reset.
  asio::write(pair.client, asio::buffer(std::string(4096, 'x')));
  asio::write(pair.server->socket, asio::buffer(answer));
  std::weak_ptr<Connection> gone = pair.server;
  tcp::socket& socket = pair.server->socket;
  CloseLingering(socket, std::move(pair.server));

  // It keeps sending (less than the socket buffers hold: this thread also runs the gateway).
  asio::write(pair.client, asio::buffer(std::string(4096, 'y')));
  pair.io.poll();
  std::string got(answer.size(), '\0');
  boost::system::error_code ec;
  asio::read(pair.client, asio::buffer(got), ec);
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_EQ(got, answer);
  // Nothing more than the answer, and the gateway's send side is shut.
  char more;
  pair.client.read_some(asio::buffer(&more, 1), ec);
  EXPECT_EQ(ec, asio::error::eof);
  EXPECT_FALSE(gone.expired()) << "let go while the client still had bytes to send";

  pair.client.shutdown(tcp::socket::shutdown_send);
  EXPECT_TRUE(RunUntil(pair.io, [&] { return gone.expired(); }))
      << "the connection outlived the client's close";
}

// A client that neither sends nor closes is let go after the two seconds.
TEST(CloseLingeringTest, AClientThatNeverClosesIsLetGo) {
  Pair pair;
  std::weak_ptr<Connection> gone = pair.server;
  tcp::socket& socket = pair.server->socket;
  CloseLingering(socket, std::move(pair.server));
  EXPECT_TRUE(RunUntil(pair.io, [&] { return gone.expired(); }));
  // Closed by the gateway: the client reads the end.
  char byte;
  boost::system::error_code ec;
  pair.client.read_some(asio::buffer(&byte, 1), ec);
  EXPECT_EQ(ec, asio::error::eof);
}

// A connection whose socket was closed already (a timeout, a failed write) is let go at once,
// not held until the deadline: only the handlers that are ready run here, never the timer's.
TEST(CloseLingeringTest, AnAlreadyClosedSocketIsLetGoAtOnce) {
  Pair pair;
  pair.server->socket.close();
  std::weak_ptr<Connection> gone = pair.server;
  tcp::socket& socket = pair.server->socket;
  CloseLingering(socket, std::move(pair.server));
  for (int i = 0; i < 10 && !gone.expired(); ++i) {
    pair.io.restart();
    pair.io.poll();
  }
  EXPECT_TRUE(gone.expired()) << "held until the deadline";
}

}  // namespace
}  // namespace relay::gateway
