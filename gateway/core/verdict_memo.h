#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gateway/core/auth_client.h"

namespace relay::gateway {

struct VerdictMemoOptions {
  size_t capacity = 100000;
  // While nothing comes from authsvc (the revocation stream down, or silent:
  // authsvc sends a beat every 250 ms), no verdict is used longer than this
  // past authsvc's last word: a Forget that the gateway cannot hear holds at
  // most this late.
  absl::Duration unwatched_keep = absl::Seconds(1);
};

// authsvc's verdicts on bearer tokens, kept in the gateway by SHA-256 of the
// token (never the token) for at most as long as authsvc says, so that a
// request needs no RPC. Revocations pushed by authsvc drop entries at once; a
// verification that was asked before a revocation is not kept (epochs), so a
// revoked verdict cannot sneak back in. A stream that dies without a word
// (authsvc's machine gone) is noticed by its silence. Thread-safe; plain C++;
// time is passed in.
class VerdictMemo {
 public:
  explicit VerdictMemo(VerdictMemoOptions options = {}) : options_(options) {}

  // Take before asking authsvc; pass to Put with the answer.
  uint64_t Epoch() const ABSL_LOCKS_EXCLUDED(mu_);

  std::optional<AuthVerdict> Find(const std::string& token_sha256, absl::Time now)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Keeps verdict for keep (capped while unwatched) unless something was
  // revoked since epoch. Lock-outs and failures are never kept.
  void Put(const std::string& token_sha256, const AuthVerdict& verdict, absl::Duration keep,
           uint64_t epoch, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);

  size_t ForgetUser(const std::string& user) ABSL_LOCKS_EXCLUDED(mu_);
  size_t ForgetToken(const std::string& token_sha256) ABSL_LOCKS_EXCLUDED(mu_);
  // The revocation stream came up or went down. Going down, every entry
  // expires within unwatched_keep.
  void SetWatched(bool watched, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  // Something came on the revocation stream (a revocation or a beat): every
  // revocation authsvc made before it has been heard.
  void Heard(absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);

  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Entry {
    AuthVerdict verdict;
    absl::Time expires;
    absl::Time stored;  // the verdict itself is authsvc's word as of then
  };

  const VerdictMemoOptions options_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  uint64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;
  bool watched_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time heard_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Time last_sweep_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace relay::gateway
