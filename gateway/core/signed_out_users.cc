#include "gateway/core/signed_out_users.h"

#include <algorithm>
#include <vector>

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
  // entries, and the floor refuses every chain begun before them. A tenth of the
  // room is made at once, so that a run of sign-outs at the cap scans the map once
  // in a while, not twice for each (under the lock a tab's hello takes too).
  DropOlderThan(at - horizon_);
  if (ended_.size() <= max_users_) {
    return;
  }
  size_t drop = ended_.size() - max_users_ + max_users_ / 10;
  std::vector<absl::Time> times;
  times.reserve(ended_.size());
  for (const auto& [name, time] : ended_) {
    times.push_back(time);
  }
  std::nth_element(times.begin(), times.begin() + (drop - 1), times.end());
  floor_ = std::max(floor_, times[drop - 1]);
  DropOlderThan(floor_ + absl::Nanoseconds(1));
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
