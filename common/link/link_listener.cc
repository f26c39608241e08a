#include "common/link/link_listener.h"

#include <chrono>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/link/link_channel_io.h"
#include "common/log.h"

namespace relay::common {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

// Links a listener holds open at once.
constexpr size_t kMaxLinks = 1024;
// Handshakes under way at once, apart from the links: a new one past this
// drops the oldest, so that connections that never finish cannot keep a
// gateway out (anyone who reaches the port may open them; a gateway's own
// handshake takes milliseconds).
constexpr size_t kMaxHandshakes = 64;

}  // namespace

struct LinkListener::State {
  asio::io_context io{1};  // one thread runs it: no locking inside
  tcp::acceptor acceptor{io};
  asio::steady_timer backoff{io};
  Factory make;
  std::vector<std::weak_ptr<LinkChannel>> channels;  // accepted, oldest first; the thread's alone
  // A flood of connections is told of once a second, not once each.
  std::chrono::steady_clock::time_point last_warning;
  int64_t unwarned = 0;
  std::thread thread;

  void Warn(absl::string_view what, int64_t links) {
    ++unwarned;
    auto now = std::chrono::steady_clock::now();
    if (now - last_warning < std::chrono::seconds(1)) {
      return;
    }
    LogWarn(what, {{"links", links}, {"connections", unwarned}});
    last_warning = now;
    unwarned = 0;
  }
};

LinkListener::LinkListener(std::unique_ptr<State> state) : state_(std::move(state)) {}

LinkListener::~LinkListener() { Stop(); }

asio::io_context& LinkListener::io() { return state_->io; }

absl::StatusOr<std::unique_ptr<LinkListener>> LinkListener::Start(const std::string& address,
                                                                  Factory make) {
  auto parts = SplitHostPort(address);
  if (!parts.ok()) {
    return parts.status();
  }
  auto state = std::make_unique<State>();
  state->make = std::move(make);
  error_code ec;
  asio::ip::address host = asio::ip::make_address(parts->first, ec);
  if (ec) {
    return absl::InvalidArgumentError(absl::StrCat("\"", address, "\": the host must be an IP address"));
  }
  int port = 0;
  if (!absl::SimpleAtoi(parts->second, &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("\"", address, "\": bad port"));
  }
  tcp::endpoint endpoint(host, static_cast<unsigned short>(port));
  tcp::acceptor& acceptor = state->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat("cannot listen for links on ", address, ": ", ec.message()));
  }
  std::unique_ptr<LinkListener> listener(new LinkListener(std::move(state)));
  listener->port_ = listener->state_->acceptor.local_endpoint().port();
  listener->Accept();
  listener->state_->thread = std::thread([s = listener->state_.get()] {
    auto guard = asio::make_work_guard(s->io);
    s->io.run();
  });
  return listener;
}

void LinkListener::Accept() {
  State& s = *state_;
  std::shared_ptr<LinkChannel> channel = s.make(s.io);
  s.acceptor.async_accept(channel->io_->socket, [this, channel](error_code ec) {
    if (ec == asio::error::operation_aborted || !state_->acceptor.is_open()) {
      return;
    }
    if (ec) {
      // Out of file descriptors, say: back off rather than spin.
      LogWarn("accepting a link failed; retrying in 100 ms", {{"error", ec.message()}});
      state_->backoff.expires_after(std::chrono::milliseconds(100));
      state_->backoff.async_wait([this](error_code ec) {
        if (!ec) {
          Accept();
        }
      });
      return;
    }
    std::vector<std::weak_ptr<LinkChannel>>& channels = state_->channels;
    std::erase_if(channels, [](const std::weak_ptr<LinkChannel>& c) { return c.expired(); });
    size_t open = 0;
    std::vector<std::shared_ptr<LinkChannel>> opening;  // oldest first
    for (const std::weak_ptr<LinkChannel>& weak : channels) {
      if (std::shared_ptr<LinkChannel> c = weak.lock()) {
        if (c->state_ == LinkChannel::State::kConnecting) {
          opening.push_back(std::move(c));
        } else if (!c->closed()) {
          ++open;
        }
      }
    }
    if (open >= kMaxLinks) {
      // Gateways are few; thousands of links are someone else's.
      state_->Warn("too many links open; closing new connections", static_cast<int64_t>(open));
      error_code ignored;
      channel->io_->socket.close(ignored);
      Accept();
      return;
    }
    if (opening.size() >= kMaxHandshakes) {
      state_->Warn("too many link handshakes under way; dropping the oldest",
                   static_cast<int64_t>(open));
      opening.front()->CloseNow(
          absl::ResourceExhaustedError("the handshake was dropped for newer ones"));
    }
    channels.push_back(channel);
    channel->Adopt();
    Accept();
  });
}

void LinkListener::Stop() {
  if (!state_->thread.joinable()) {
    return;
  }
  // Every link is closed first, so that its owner lets go of it (OnClosed)
  // while the thread still runs.
  asio::post(state_->io, [s = state_.get()] {
    error_code ignored;
    s->acceptor.close(ignored);
    s->backoff.cancel();
    for (const std::weak_ptr<LinkChannel>& weak : s->channels) {
      if (std::shared_ptr<LinkChannel> channel = weak.lock()) {
        channel->CloseNow(absl::UnavailableError("the router is stopping"));
      }
    }
    s->io.stop();
  });
  state_->thread.join();
}

}  // namespace relay::common
