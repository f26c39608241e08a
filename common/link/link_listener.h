#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/link/link_channel.h"

namespace relay::common {

// Accepts links on one address, on a thread of its own, and hands each to a
// channel from make(), which handshakes on that thread. A client that does not
// finish its handshake within 10 s is dropped; beyond 64 handshakes under way
// the oldest is dropped; beyond 1,024 links open a new connection is closed at
// once.
class LinkListener {
 public:
  using Factory = std::function<std::shared_ptr<LinkChannel>(boost::asio::io_context& io)>;

  // address: host:port (port 0: any). make() gives each channel its TLS (or none).
  static absl::StatusOr<std::unique_ptr<LinkListener>> Start(const std::string& address,
                                                             Factory make);
  ~LinkListener();
  LinkListener(const LinkListener&) = delete;
  LinkListener& operator=(const LinkListener&) = delete;

  int port() const { return port_; }
  // The io_context of every accepted channel.
  boost::asio::io_context& io();
  // Closes every link (their OnClosed runs), stops accepting, and stops the
  // thread.
  void Stop();

 private:
  struct State;
  explicit LinkListener(std::unique_ptr<State> state);
  void Accept();

  std::unique_ptr<State> state_;
  int port_ = 0;
};

}  // namespace relay::common
