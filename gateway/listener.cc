#include "gateway/listener.h"

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gateway/http_session.h"

namespace relay::gateway {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

Listener::Listener(asio::io_context& io, GatewayState& state)
    : io_(io), acceptor_(asio::make_strand(io)), state_(state) {}

absl::StatusOr<std::shared_ptr<Listener>> Listener::Create(asio::io_context& io,
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
  std::shared_ptr<Listener> listener(new Listener(io, state));
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
  });
}

void Listener::DoAccept() {
  // Each connection gets its own strand.
  acceptor_.async_accept(asio::make_strand(io_),
                         [self = shared_from_this()](boost::system::error_code ec,
                                                     tcp::socket socket) {
                           self->OnAccept(ec, std::move(socket));
                         });
}

void Listener::OnAccept(boost::system::error_code ec, tcp::socket socket) {
  if (ec == asio::error::operation_aborted) {
    return;  // stopped
  }
  if (!ec) {
    boost::system::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    std::make_shared<HttpSession>(std::move(socket), state_)->Run();
  }
  DoAccept();
}

}  // namespace relay::gateway
