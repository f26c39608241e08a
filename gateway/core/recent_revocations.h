#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace relay::gateway {

// The revocations this gateway heard lately, numbered, so that a stream admitted on a verdict
// asked before one can be told from a stream asked after it. Without this, a stream whose
// verification was on its way back from authsvc while a revocation of its token (or its user)
// was pushed opened just after the push had walked the open streams, and stayed open on a
// revoked token. A request takes a Mark() before its token is looked up; its stream, once
// registered where a push finds it, asks Since(mark): either the push's walk found it, or it
// finds the push here.
//
// Keeps the last `capacity`: a mark older than all of them cannot be told apart and counts as
// revoked (the stream ends, and its agent opens it again, verified anew). Thread-safe; plain
// C++. Mark() is one atomic load, taken for every request.
class RecentRevocations {
 public:
  explicit RecentRevocations(size_t capacity = 4096);

  uint64_t Mark() const { return heard_.load(std::memory_order_acquire); }

  // A user-wide revocation names the user, a token's its SHA-256 (hex); either may be empty.
  void Add(absl::string_view user, absl::string_view token_sha256) ABSL_LOCKS_EXCLUDED(mu_);

  // Whether a revocation of this user, or of this token, was heard after mark.
  bool Since(uint64_t mark, absl::string_view user, absl::string_view token_sha256) const
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Entry {
    std::string user;
    std::string token_sha256;
  };

  const size_t capacity_;
  mutable absl::Mutex mu_;
  std::deque<Entry> entries_ ABSL_GUARDED_BY(mu_);  // the newest last, numbered up to heard_
  std::atomic<uint64_t> heard_{0};                  // written under mu_
};

}  // namespace relay::gateway
