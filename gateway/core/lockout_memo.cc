#include "gateway/core/lockout_memo.h"

namespace relay::gateway {

void LockoutMemo::Put(const std::string& address, absl::Time until, absl::Time now) {
  absl::MutexLock lock(&mu_);
  if (until_.size() >= capacity_ && !until_.contains(address)) {
    // A whole pass at most once a second.
    if (now >= last_sweep_ + absl::Seconds(1)) {
      last_sweep_ = now;
      absl::erase_if(until_, [now](const auto& e) { return e.second <= now; });
    }
    if (until_.size() >= capacity_) {
      return;  // full of live lock-outs: the host API keeps braking these
    }
  }
  until_[address] = until;
  size_.store(until_.size(), std::memory_order_relaxed);
}

std::optional<absl::Duration> LockoutMemo::Remaining(const std::string& address, absl::Time now) {
  absl::MutexLock lock(&mu_);
  auto it = until_.find(address);
  if (it == until_.end()) {
    return std::nullopt;
  }
  if (it->second <= now) {
    until_.erase(it);
    size_.store(until_.size(), std::memory_order_relaxed);
    return std::nullopt;
  }
  return it->second - now;
}

}  // namespace relay::gateway
