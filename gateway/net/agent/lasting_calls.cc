#include "gateway/net/agent/lasting_calls.h"

#include <algorithm>
#include <cassert>
#include <utility>

#include <boost/asio/execution/context.hpp>
#include <boost/asio/query.hpp>

namespace relay::gateway {

namespace asio = boost::asio;

asio::execution_context::id LastingCalls::id;

LastingCalls::LastingCalls(asio::io_context& io) : asio::execution_context::service(io) {
  timer_.emplace(io);
}

LastingCalls& LastingCalls::Of(const asio::any_io_executor& executor) {
  auto& context = asio::query(executor, asio::execution::context);
  // Every I/O executor of the gateway's is an io_context's (IoPool), and the tests' too.
  return asio::use_service<LastingCalls>(static_cast<asio::io_context&>(context));
}

void LastingCalls::Add(std::chrono::steady_clock::time_point at,
                       std::weak_ptr<LastingCallOwner> owner, uint64_t call) {
  assert(due_.empty() || at >= due_.back().at);
  due_.push_back({at, std::move(owner), call});
  Arm();
}

void LastingCalls::shutdown() {
  // The io_context is going: its handlers are destroyed, not run.
  due_.clear();
  timer_.reset();
}

void LastingCalls::Arm() {
  if (armed_ || due_.empty() || !timer_) {
    return;
  }
  armed_ = true;
  // Not sooner than kSlack from now: at one call after the other the next is due within a
  // millisecond, and a timer armed for each would be the timer of each call again.
  timer_->expires_at(std::max(due_.front().at, std::chrono::steady_clock::now() + kSlack));
  timer_->async_wait([this](boost::system::error_code ec) {
    if (ec) {
      armed_ = false;  // only shutdown cancels it
      return;
    }
    OnTimer();
  });
}

void LastingCalls::OnTimer() {
  armed_ = false;
  const auto now = std::chrono::steady_clock::now();
  while (!due_.empty() && due_.front().at <= now) {
    Entry entry = std::move(due_.front());
    due_.pop_front();
    if (auto owner = entry.owner.lock()) {
      owner->OnCallLasting(entry.call);
    }
  }
  Arm();
}

}  // namespace relay::gateway
