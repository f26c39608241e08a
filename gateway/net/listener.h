#pragma once

#include <memory>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "absl/status/statusor.h"
#include "gateway/net/gateway_state.h"

namespace relay::gateway {

// Accepts connections and starts an HttpSession for each, on a new strand.
class Listener : public std::enable_shared_from_this<Listener> {
 public:
  // Binds and listens; the error names the address.
  static absl::StatusOr<std::shared_ptr<Listener>> Create(boost::asio::io_context& io,
                                                          const std::string& listen,
                                                          GatewayState& state);
  void Run();
  void Stop();
  int port() const;

 private:
  Listener(boost::asio::io_context& io, GatewayState& state);
  void DoAccept();
  void OnAccept(boost::system::error_code ec, boost::asio::ip::tcp::socket socket);

  boost::asio::io_context& io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer backoff_timer_;
  std::chrono::milliseconds backoff_{0};
  GatewayState& state_;
};

}  // namespace relay::gateway
