#include "gateway/core/signed_out_users.h"

#include <algorithm>

namespace relay::gateway {

SignedOutUsers::SignedOutUsers(absl::Duration horizon, size_t max_users)
    : horizon_(horizon), max_users_(std::max<size_t>(max_users, 1)) {}

void SignedOutUsers::Add(absl::string_view user, absl::Time at) {
  absl::MutexLock lock(&mu_);
  absl::Time& ended = ended_[user];
  ended = std::max(ended, at);
  if (ended_.size() <= max_users_) {
    return;
  }
  // Full: what no chain can outlive goes first; if that is not enough, the oldest
  // entries, and the floor refuses every chain begun before them.
  DropOlderThan(at - horizon_);
  while (ended_.size() > max_users_) {
    auto oldest = std::min_element(
        ended_.begin(), ended_.end(),
        [](const auto& a, const auto& b) { return a.second < b.second; });
    floor_ = std::max(floor_, oldest->second);
    ended_.erase(oldest);
  }
}

void SignedOutUsers::DropOlderThan(absl::Time limit) {
  absl::erase_if(ended_, [limit](const auto& entry) { return entry.second < limit; });
}

bool SignedOutUsers::EndedSince(absl::string_view user, absl::Time signed_at) const {
  absl::MutexLock lock(&mu_);
  if (signed_at <= floor_) {
    return true;
  }
  auto it = ended_.find(user);
  return it != ended_.end() && it->second >= signed_at;
}

size_t SignedOutUsers::size() const {
  absl::MutexLock lock(&mu_);
  return ended_.size();
}

}  // namespace relay::gateway
