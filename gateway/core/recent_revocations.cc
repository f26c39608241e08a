#include "gateway/core/recent_revocations.h"

#include <algorithm>

namespace relay::gateway {

RecentRevocations::RecentRevocations(size_t capacity) : capacity_(std::max<size_t>(capacity, 1)) {}

void RecentRevocations::Add(absl::string_view user, absl::string_view token_sha256) {
  absl::MutexLock lock(&mu_);
  entries_.push_back(Entry{std::string(user), std::string(token_sha256)});
  if (entries_.size() > capacity_) {
    entries_.pop_front();
  }
  heard_.store(heard_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

bool RecentRevocations::Since(uint64_t mark, absl::string_view user,
                              absl::string_view token_sha256) const {
  absl::MutexLock lock(&mu_);
  const uint64_t heard = heard_.load(std::memory_order_relaxed);
  if (mark >= heard) {
    return false;
  }
  const uint64_t oldest = heard - entries_.size();  // the number before the first kept
  if (mark < oldest) {
    return true;  // some heard after mark are no longer kept
  }
  for (size_t i = static_cast<size_t>(mark - oldest); i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    if ((!e.user.empty() && e.user == user) ||
        (!e.token_sha256.empty() && e.token_sha256 == token_sha256)) {
      return true;
    }
  }
  return false;
}

}  // namespace relay::gateway
