#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

namespace relay::gateway {

// Who is told that its call has lasted (HttpSession: it then watches its agent's socket).
class LastingCallOwner {
 public:
  // call: the number Add was given; the owner checks it is still its call in flight.
  virtual void OnCallLasting(uint64_t call) = 0;

 protected:
  ~LastingCallOwner() = default;
};

// The forwarded calls of one I/O thread that are to be told when they have lasted a while. One
// timer serves them all, armed for the earliest: a timer of each call's own became the
// reactor's earliest deadline at every call, and moving the kernel's timer for it was a system
// call of every call's, though most are answered long before (docs/performance.md, "-c1").
// The calls are told in the order they were added (the order of their times, since each waits
// as long as the others), up to kSlack late, so that the timer fires at most once per kSlack
// however many calls there are. Calls answered meanwhile stay until their time and are skipped
// then: at most the calls of a watch period and kSlack are held. (Each entry's weak_ptr keeps
// its connection's memory, the object and its count in one block, until the entry goes: up to
// 30 ms after the connection closed.)
//
// One per io_context (an Asio service); used on its thread only.
class LastingCalls final : public boost::asio::execution_context::service {
 public:
  static boost::asio::execution_context::id id;
  static constexpr std::chrono::milliseconds kSlack{10};

  explicit LastingCalls(boost::asio::io_context& io);

  // The one of the io_context that executor runs on.
  static LastingCalls& Of(const boost::asio::any_io_executor& executor);

  // At `at` (up to kSlack later), owner->OnCallLasting(call), unless the owner is gone by then.
  // `at` is never earlier than the last call's: an earlier one would wait behind it.
  void Add(std::chrono::steady_clock::time_point at, std::weak_ptr<LastingCallOwner> owner,
           uint64_t call);

  size_t held() const { return due_.size(); }

 private:
  struct Entry {
    std::chrono::steady_clock::time_point at;
    std::weak_ptr<LastingCallOwner> owner;
    uint64_t call;
  };

  void shutdown() override;
  void Arm();
  void OnTimer();

  std::deque<Entry> due_;
  std::optional<boost::asio::steady_timer> timer_;
  bool armed_ = false;
};

}  // namespace relay::gateway
