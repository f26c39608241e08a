#include "gateway/core/call_gate.h"

#include <utility>

namespace relay::gateway {

CallGate::Entry CallGate::Enter(Waiting& call) {
  absl::MutexLock lock(&mu_);
  if (in_flight_ < options_.most_in_flight && waiting_.empty()) {
    ++in_flight_;
    return Entry::kStartNow;
  }
  if (waiting_.size() >= options_.most_waiting) {
    return Entry::kRefused;
  }
  waiting_.push_back(std::move(call));
  return Entry::kWaiting;
}

CallGate::Released CallGate::Leave(absl::Time now) {
  Released released;
  absl::MutexLock lock(&mu_);
  --in_flight_;
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
  return released;
}

std::vector<CallGate::Waiting> CallGate::TakeWaiting() {
  std::vector<Waiting> taken;
  absl::MutexLock lock(&mu_);
  while (!waiting_.empty()) {
    taken.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
  }
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
