#include "gateway/core/verdict_memo.h"

#include <algorithm>

namespace relay::gateway {

uint64_t VerdictMemo::Epoch() const {
  absl::MutexLock lock(&mu_);
  return epoch_;
}

std::optional<AuthVerdict> VerdictMemo::Find(const std::string& token_sha256, absl::Time now) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(token_sha256);
  if (it == entries_.end()) {
    return std::nullopt;
  }
  if (now >= it->second.expires) {
    entries_.erase(it);
    return std::nullopt;
  }
  // Nothing from authsvc for too long: a revocation may be on its way unheard.
  if (now >= std::max(heard_, it->second.stored) + options_.unwatched_keep) {
    return std::nullopt;
  }
  return it->second.verdict;
}

void VerdictMemo::Put(const std::string& token_sha256, const AuthVerdict& verdict,
                      absl::Duration keep, uint64_t epoch, absl::Time now) {
  if (verdict.kind != AuthVerdict::Kind::kOk && verdict.kind != AuthVerdict::Kind::kInvalid) {
    return;
  }
  absl::MutexLock lock(&mu_);
  if (epoch != epoch_ || keep <= absl::ZeroDuration() || options_.capacity == 0) {
    return;
  }
  if (!watched_) {
    keep = std::min(keep, options_.unwatched_keep);
  }
  if (entries_.size() >= options_.capacity && !entries_.contains(token_sha256)) {
    // Full: drop what has expired, a whole pass at most once a second (under
    // the lock every request's Find takes); else one entry makes room.
    if (now >= last_sweep_ + absl::Seconds(1)) {
      last_sweep_ = now;
      absl::erase_if(entries_, [now](const auto& e) { return now >= e.second.expires; });
    }
    if (entries_.size() >= options_.capacity) {
      entries_.erase(entries_.begin());
    }
  }
  entries_[token_sha256] = Entry{verdict, now + keep, now};
}

size_t VerdictMemo::ForgetUser(const std::string& user) {
  absl::MutexLock lock(&mu_);
  ++epoch_;
  return absl::erase_if(entries_, [&user](const auto& e) { return e.second.verdict.user == user; });
}

size_t VerdictMemo::ForgetToken(const std::string& token_sha256) {
  absl::MutexLock lock(&mu_);
  ++epoch_;
  return entries_.erase(token_sha256);
}

void VerdictMemo::SetWatched(bool watched, absl::Time now) {
  absl::MutexLock lock(&mu_);
  // Either way, a verification asked across the change is not kept: asked
  // while unwatched, its token may have been revoked unheard.
  ++epoch_;
  if (watched_ && !watched) {
    for (auto& [key, entry] : entries_) {
      entry.expires = std::min(entry.expires, now + options_.unwatched_keep);
    }
  }
  if (watched) {
    heard_ = std::max(heard_, now);
  }
  watched_ = watched;
}

void VerdictMemo::Heard(absl::Time now) {
  absl::MutexLock lock(&mu_);
  heard_ = std::max(heard_, now);
}

size_t VerdictMemo::size() const {
  absl::MutexLock lock(&mu_);
  return entries_.size();
}

}  // namespace relay::gateway
