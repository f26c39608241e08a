#pragma once

#include <cstddef>
#include <deque>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace relay::gateway {

// Sessions ended by DELETE, on any gateway (the router tells every gateway):
// their ids stay well signed but must get 404. Bounded, oldest forgotten
// first. Thread-safe.
class EndedSessions {
 public:
  explicit EndedSessions(size_t capacity = 100000) : capacity_(capacity) {}
  void Add(const std::string& session) ABSL_LOCKS_EXCLUDED(mu_);
  bool Contains(const std::string& session) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const size_t capacity_;
  mutable absl::Mutex mu_;
  absl::flat_hash_set<std::string> ended_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> order_ ABSL_GUARDED_BY(mu_);
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
