#pragma once

#include <algorithm>
#include <cstddef>
#include <list>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/fifo.h"

namespace relay::gateway {

// Sessions ended by DELETE, on any gateway (the router tells every gateway):
// their ids stay well signed but must get 404. Bounded per account, the
// oldest of an account forgotten first, so that one account ending sessions
// in a loop forgets only its own; and bounded in accounts, the account that
// ended a session least recently forgotten first. The account is the signed
// part of the id ("v1.<account>.<nonce>.<mac>"). Thread-safe.
class EndedSessions {
 public:
  explicit EndedSessions(size_t per_account = 64, size_t accounts = 10000)
      : per_account_(std::max<size_t>(per_account, 1)), max_accounts_(std::max<size_t>(accounts, 1)) {}
  void Add(const std::string& session) ABSL_LOCKS_EXCLUDED(mu_);
  bool Contains(const std::string& session) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Account {
    common::Fifo<std::string> ended;  // oldest first
    std::list<std::string>::iterator recency;
  };
  void ForgetLeastRecentLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t per_account_;
  const size_t max_accounts_;
  mutable absl::Mutex mu_;
  absl::flat_hash_set<std::string> ended_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, Account> accounts_ ABSL_GUARDED_BY(mu_);
  std::list<std::string> recency_ ABSL_GUARDED_BY(mu_);  // accounts, most recent first
};

// Decides when an agent request must tell the router that its session is
// alive: at most once per interval per session, so the hot path sends almost
// nothing. Thread-safe.
class TouchThrottle {
 public:
  explicit TouchThrottle(absl::Duration interval = absl::Seconds(5), size_t capacity = 100000)
      : interval_(interval), capacity_(capacity) {}
  bool ShouldTouch(const std::string& session, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const absl::Duration interval_;
  const size_t capacity_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, absl::Time> last_ ABSL_GUARDED_BY(mu_);
};

}  // namespace relay::gateway
