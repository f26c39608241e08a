#include "gateway/core/session_state.h"

#include "absl/strings/string_view.h"

namespace relay::gateway {

namespace {

// The account part of a session id; the whole id when it has none (such an
// id never verifies, so where it is kept does not matter).
absl::string_view AccountPart(absl::string_view session) {
  size_t first = session.find('.');
  if (first == absl::string_view::npos) {
    return session;
  }
  size_t second = session.find('.', first + 1);
  return session.substr(first + 1, second == absl::string_view::npos
                                       ? absl::string_view::npos
                                       : second - first - 1);
}

}  // namespace

void EndedSessions::Add(const std::string& session) {
  absl::MutexLock lock(&mu_);
  if (!ended_.insert(session).second) {
    return;
  }
  std::string key(AccountPart(session));
  auto it = accounts_.find(key);
  if (it == accounts_.end()) {
    if (accounts_.size() >= max_accounts_) {
      ForgetLeastRecentLocked();
    }
    recency_.push_front(key);
    it = accounts_.emplace(key, Account{{}, recency_.begin()}).first;
  } else {
    recency_.splice(recency_.begin(), recency_, it->second.recency);
  }
  common::Fifo<std::string>& ended = it->second.ended;
  ended.push_back(session);
  if (ended.size() > per_account_) {
    ended_.erase(ended.front());
    ended.pop_front();
  }
}

void EndedSessions::ForgetLeastRecentLocked() {
  auto it = accounts_.find(recency_.back());
  for (const std::string& session : it->second.ended) {
    ended_.erase(session);
  }
  accounts_.erase(it);
  recency_.pop_back();
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
