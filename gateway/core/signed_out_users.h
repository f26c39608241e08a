#pragma once

#include <cstddef>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace relay::gateway {

// Users whose sign-in ended lately (authsvc pushed a user-wide revocation: the
// password changed, the account went), so that a chain of resume credentials
// begun before that moment does not bring their tab back: it must fetch a
// ticket, which the host API refuses. An entry is needed only as long as a
// chain begun before it could still be good (`horizon`, a chain's lifetime).
// Bounded: past `max_users` the oldest entries go (a tenth of the room at
// once), and every chain begun before the newest entry dropped is refused.
// Thread-safe; plain C++.
class SignedOutUsers {
 public:
  SignedOutUsers(absl::Duration horizon, size_t max_users);

  void Add(absl::string_view user, absl::Time at) ABSL_LOCKS_EXCLUDED(mu_);

  // Whether user's sign-in ended at or after `signed_at` (a chain begun then
  // is no longer good).
  bool EndedSince(absl::string_view user, absl::Time signed_at) const ABSL_LOCKS_EXCLUDED(mu_);

  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void DropOlderThan(absl::Time limit) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const absl::Duration horizon_;
  const size_t max_users_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, absl::Time> ended_ ABSL_GUARDED_BY(mu_);
  absl::Time floor_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();  // dropped while still needed
};

}  // namespace relay::gateway
