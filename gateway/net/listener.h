#pragma once

#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "absl/status/statusor.h"
#include "common/process_limits.h"
#include "gateway/net/gateway_state.h"
#include "gateway/net/io_pool.h"

namespace relay::gateway {

// Accepts connections (on the pool's first thread) and starts an HttpSession
// for each on the pool's next thread.
class Listener : public std::enable_shared_from_this<Listener> {
 public:
  // Binds and listens; the error names the address.
  static absl::StatusOr<std::shared_ptr<Listener>> Create(IoPool& pool,
                                                          const std::string& listen,
                                                          GatewayState& state);
  void Run();
  void Stop();
  int port() const;

 private:
  Listener(IoPool& pool, GatewayState& state);
  void DoAccept();
  void OnAccept(boost::system::error_code ec, boost::asio::ip::tcp::socket socket);
  // A connection over --max_connections: answered 503 and closed, from the descriptors the
  // cap keeps back, so that the client hears why and when to retry.
  void Refuse(boost::asio::ip::tcp::socket socket);

  // Half the descriptors the default cap keeps back (common::ConnectionsWithin).
  static constexpr int64_t kMostRefusing = common::kReservedDescriptors / 2;

  IoPool& pool_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer backoff_timer_;
  std::chrono::milliseconds backoff_{0};
  GatewayState& state_;
  const std::string over_cap_answer_;
};

}  // namespace relay::gateway
