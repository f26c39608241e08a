#include "gateway/core/call_gate.h"

#include <utility>

namespace relay::gateway {

CallGate::Entry CallGate::Enter(Waiting& call) {
  absl::MutexLock lock(&mu_);
  if (in_flight_ < options_.most_in_flight && waiting_.empty()) {
    ++in_flight_;
    return Entry::kStartNow;
  }
  if (waiting_.size() >= options_.most_waiting ||
      WouldWaitTooLong(waiting_.size() + 1, call.since)) {
    return Entry::kRefused;
  }
  waiting_.push_back(std::move(call));
  return Entry::kWaiting;
}

bool CallGate::WouldWaitTooLong(size_t place, absl::Time now) const {
  const size_t window = options_.pace_window;
  if (window == 0 || paced_ < window) {
    return false;
  }
  // place calls must leave before this one starts: place / (window / elapsed) > most_wait.
  absl::Duration elapsed = now - leaves_[paced_ % window];
  return elapsed * static_cast<int64_t>(place) > options_.most_wait * static_cast<int64_t>(window);
}

CallGate::Released CallGate::Leave(absl::Time now) {
  Released released;
  absl::MutexLock lock(&mu_);
  --in_flight_;
  if (!waiting_.empty() && !leaves_.empty()) {
    leaves_[paced_++ % leaves_.size()] = now;
  }
  while (!waiting_.empty()) {
    Waiting next = std::move(waiting_.front());
    waiting_.pop_front();
    if (now - next.since > options_.most_wait) {
      released.refused.push_back(std::move(next));
      continue;
    }
    ++in_flight_;
    released.start = std::move(next);
    break;
  }
  if (waiting_.empty()) {
    paced_ = 0;  // a new wait measures its own pace
  }
  return released;
}

std::vector<CallGate::Waiting> CallGate::TakeWaiting() {
  std::vector<Waiting> taken;
  absl::MutexLock lock(&mu_);
  while (!waiting_.empty()) {
    taken.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
  }
  paced_ = 0;
  return taken;
}

size_t CallGate::in_flight() const {
  absl::MutexLock lock(&mu_);
  return in_flight_;
}

size_t CallGate::waiting() const {
  absl::MutexLock lock(&mu_);
  return waiting_.size();
}

}  // namespace relay::gateway
