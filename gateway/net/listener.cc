#include "gateway/net/listener.h"

#include <atomic>

#include <boost/asio/post.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/slab_pool.h"
#include "common/log.h"
#include "gateway/core/http_framing.h"
#include "gateway/net/agent/http_session.h"
#include "gateway/net/agent/response_writer.h"

namespace relay::gateway {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

Listener::Listener(IoPool& pool, GatewayState& state)
    : pool_(pool), acceptor_(pool.First()), backoff_timer_(acceptor_.get_executor()),
      state_(state),
      over_cap_answer_(EncodeResponse(
          503, "application/json",
          JsonErrorBody("this gateway holds as many connections as it may; try again shortly"),
          "Retry-After: 5\r\n", /*keep_alive=*/false)) {}

absl::StatusOr<std::shared_ptr<Listener>> Listener::Create(IoPool& pool,
                                                           const std::string& listen,
                                                           GatewayState& state) {
  size_t colon = listen.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(listen.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("bad --listen address ", listen));
  }
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  boost::system::error_code ec;
  auto address = asio::ip::make_address(host, ec);
  if (ec) {
    return absl::InvalidArgumentError(absl::StrCat("bad --listen host ", host));
  }
  std::shared_ptr<Listener> listener(new Listener(pool, state));
  tcp::endpoint endpoint(address, static_cast<unsigned short>(port));
  auto& acceptor = listener->acceptor_;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", listen, ": ", ec.message()));
  }
  return listener;
}

int Listener::port() const {
  boost::system::error_code ec;
  return acceptor_.local_endpoint(ec).port();
}

void Listener::Run() { DoAccept(); }

void Listener::Stop() {
  asio::post(acceptor_.get_executor(), [self = shared_from_this()] {
    boost::system::error_code ec;
    self->acceptor_.close(ec);
    self->backoff_timer_.cancel();
  });
}

void Listener::DoAccept() {
  acceptor_.async_accept(pool_.Next(),
                         [self = shared_from_this()](boost::system::error_code ec,
                                                     tcp::socket socket) {
                           self->OnAccept(ec, std::move(socket));
                         });
}

void Listener::OnAccept(boost::system::error_code ec, tcp::socket socket) {
  if (ec == asio::error::operation_aborted || !acceptor_.is_open()) {
    return;  // stopped
  }
  if (ec) {
    // Out of file descriptors (or another resource): retrying at once would
    // fail at once and spin a core. Back off, 10 ms doubling to 1 s.
    state_.metrics.accept_errors.Add();
    backoff_ = std::min(std::chrono::milliseconds(1000),
                        backoff_ == std::chrono::milliseconds(0) ? std::chrono::milliseconds(10)
                                                                 : backoff_ * 2);
    if (backoff_ >= std::chrono::milliseconds(1000) || backoff_ == std::chrono::milliseconds(10)) {
      common::LogWarn("accept failed; backing off",
                      {{"error", ec.message()}, {"backoff_ms", static_cast<int64_t>(backoff_.count())}});
    }
    backoff_timer_.expires_after(backoff_);
    backoff_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (!ec) {
        self->DoAccept();
      }
    });
    return;
  }
  backoff_ = std::chrono::milliseconds(0);
  if (state_.connections.load() >= state_.options.max_connections) {
    Refuse(std::move(socket));
  } else {
    boost::system::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    common::MakeSlabShared<HttpSession>(std::move(socket), state_)->Run();
  }
  DoAccept();
}

namespace {

// A connection over the cap while it is answered and closed: counted in GatewayState::refusing
// for as long as it holds its descriptor.
struct RefusedConnection {
  RefusedConnection(tcp::socket s, std::atomic<int64_t>& refusing)
      : socket(std::move(s)), count(refusing) {
    count.fetch_add(1);
  }
  ~RefusedConnection() { count.fetch_sub(1); }
  tcp::socket socket;
  std::atomic<int64_t>& count;
};

}  // namespace

void Listener::Refuse(tcp::socket socket) {
  state_.metrics.connections_refused.Add();
  // The answers may use half the descriptors the cap keeps back (the rest are the gateway's
  // own); past that, a bare close, as when the gateway cannot answer at all.
  if (state_.refusing.load() >= kMostRefusing) {
    boost::system::error_code ignored;
    socket.close(ignored);
    return;
  }
  auto refused = std::make_shared<RefusedConnection>(std::move(socket), state_.refusing);
  // On the socket's own thread, where its lingering close runs (as an HttpSession does).
  asio::post(refused->socket.get_executor(), [refused, self = shared_from_this()] {
    // The answer goes before the request is read: a client may read it while still sending
    // (HTTP/1.1 allows an early answer), and the lingering close reads what it sends, so that
    // the answer is not lost to a reset. A few hundred bytes into a new socket's empty send
    // buffer: one write that does not block.
    boost::system::error_code ignored;
    refused->socket.non_blocking(true, ignored);
    refused->socket.write_some(asio::buffer(self->over_cap_answer_), ignored);
    CloseLingering(refused->socket, refused);
  });
}

}  // namespace relay::gateway
