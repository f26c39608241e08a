#pragma once

#include <atomic>
#include <cstddef>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace relay::gateway {

// Addresses the host API's brake has locked out (429), until their
// Retry-After: the gateway answers 429 itself meanwhile, so that a locked-out
// stranger's guesses stop reaching authsvc and the host API. Bounded; plain
// C++; thread-safe; time passed in.
class LockoutMemo {
 public:
  explicit LockoutMemo(size_t capacity = 100000) : capacity_(capacity) {}

  void Put(const std::string& address, absl::Time until, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  // How long the address stays locked out, if it is.
  std::optional<absl::Duration> Remaining(const std::string& address, absl::Time now)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Cheap check for the hot path: most of the time nobody is locked out.
  bool empty() const { return size_.load(std::memory_order_relaxed) == 0; }

 private:
  const size_t capacity_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, absl::Time> until_ ABSL_GUARDED_BY(mu_);
  absl::Time last_sweep_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::atomic<size_t> size_{0};
};

}  // namespace relay::gateway
