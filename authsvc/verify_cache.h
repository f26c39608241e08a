#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "authsvc/host_answer.h"

namespace relay::authsvc {

struct VerifyCacheOptions {
  absl::Duration ttl = absl::Seconds(5);           // a yes; zero: never cached
  absl::Duration negative_ttl = absl::Seconds(5);  // a no (401); zero: never cached
  size_t capacity = 100000;                        // entries, least recently used evicted
};

// Verifications by SHA-256 of the token (never the token): a yes for ttl, a
// no for negative_ttl, nothing else (lock-outs and failures are never
// cached). Concurrent verifications of one token from one address share one
// upstream request: not across addresses, since the host's brake answers per
// address, and not across a Forget, since a request started before it may
// carry the answer from before it.
// Thread-safe; plain C++; time comes from the injected clock.
class VerifyCache {
 public:
  using Result = absl::StatusOr<HostAnswer>;
  using Done = std::function<void(const Result&)>;
  // Starts the upstream request; calls its argument exactly once, on any thread.
  using Fetch = std::function<void(Done)>;

  VerifyCache(VerifyCacheOptions options, std::function<absl::Time()> clock)
      : options_(options), clock_(std::move(clock)) {}

  // done runs exactly once: at once from the cache, or when the upstream
  // request (this caller's or a concurrent one's) ends. address: the
  // agent's, as the upstream request carries it.
  void Verify(const std::string& token_sha256, const std::string& address, const Fetch& fetch,
              Done done) ABSL_LOCKS_EXCLUDED(mu_);

  // Drop cached answers at once; verifications in flight are not cached
  // either. Return how many cached entries were dropped.
  size_t ForgetUser(const std::string& user) ABSL_LOCKS_EXCLUDED(mu_);
  size_t ForgetToken(const std::string& token_sha256) ABSL_LOCKS_EXCLUDED(mu_);

  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);

  struct Stats {
    uint64_t entries = 0;
    uint64_t hits = 0;           // answered by a cached yes
    uint64_t negative_hits = 0;  // answered by a cached no
    uint64_t misses = 0;         // started an upstream request
    uint64_t coalesced = 0;      // waited for another caller's request
  };
  Stats stats() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Entry {
    std::string key;
    HostAnswer answer;
    absl::Time expires;
  };
  struct Pending {
    std::vector<Done> waiters;
    uint64_t forget_epoch = 0;
  };

  // key: the cache's; join: pending_'s.
  void Complete(const std::string& key, const std::string& join,
                const std::shared_ptr<Pending>& pending, const Result& result)
      ABSL_LOCKS_EXCLUDED(mu_);
  void EraseLocked(std::list<Entry>::iterator it) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const VerifyCacheOptions options_;
  const std::function<absl::Time()> clock_;
  mutable absl::Mutex mu_;
  std::list<Entry> lru_ ABSL_GUARDED_BY(mu_);  // most recently used first
  absl::flat_hash_map<std::string, std::list<Entry>::iterator> index_ ABSL_GUARDED_BY(mu_);
  // By token hash and address: the upstream request later callers may join.
  absl::flat_hash_map<std::string, std::shared_ptr<Pending>> pending_ ABSL_GUARDED_BY(mu_);
  uint64_t forget_epoch_ ABSL_GUARDED_BY(mu_) = 0;
  Stats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace relay::authsvc
