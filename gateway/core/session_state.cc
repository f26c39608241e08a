#include "gateway/core/session_state.h"

namespace relay::gateway {

void EndedSessions::Add(const std::string& session) {
  absl::MutexLock lock(&mu_);
  if (!ended_.insert(session).second) {
    return;
  }
  order_.push_back(session);
  if (order_.size() > capacity_) {
    ended_.erase(order_.front());
    order_.pop_front();
  }
}

bool EndedSessions::Contains(const std::string& session) const {
  absl::MutexLock lock(&mu_);
  return ended_.contains(session);
}

bool TouchThrottle::ShouldTouch(const std::string& session, absl::Time now) {
  absl::MutexLock lock(&mu_);
  if (last_.size() >= capacity_) {
    // Forgetting everything only costs one extra touch per active session.
    last_.clear();
  }
  auto [it, fresh] = last_.try_emplace(session, now);
  if (fresh) {
    return true;
  }
  if (now - it->second < interval_) {
    return false;
  }
  it->second = now;
  return true;
}

}  // namespace relay::gateway
