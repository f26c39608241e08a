#pragma once

#include <functional>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace relay::gateway {

// When a gateway tries a router shard's link again (docs/protocols.md,
// "Links"): a router that is down or slow to admit, on a backoff doubling
// from 100 ms to 1 s; one that refuses (this gateway's certificate), once a
// second; a link that held a while (the router restarted, say) soon, 100 ms;
// one that never opened or failed at once, on the doubling backoff, so that a
// shard that admits but whose link fails is not hammered. Every wait is
// jittered by a factor in [0.5, 1.5), so that the gateways of a fleet do not
// come back in step.
//
// Plain C++: time and randomness are given to it. Not thread-safe (the
// shard's lock covers it).
class RelinkPolicy {
 public:
  // A factor in [0.5, 1.5) for each wait.
  using Jitter = std::function<double()>;
  // Uniform, from a generator seeded by the system's randomness.
  static Jitter RandomJitter();

  explicit RelinkPolicy(Jitter jitter) : jitter_(std::move(jitter)) {}

  // Admission (OpenLink) failed with code: the wait before the next try.
  absl::Duration AfterAdmissionFailed(absl::StatusCode code);
  // The router admitted the link at now.
  void Established(absl::Time now) { established_at_ = now; }
  // The link ended at now: the wait before the next try.
  absl::Duration AfterLinkEnded(absl::Time now);

  // How long a link must have held to be tried again at once.
  static constexpr absl::Duration kHeld = absl::Seconds(5);
  static constexpr absl::Duration kFirst = absl::Milliseconds(100);
  static constexpr absl::Duration kMost = absl::Seconds(1);

 private:
  absl::Duration Doubled();
  absl::Duration Jittered(absl::Duration wait) { return wait * jitter_(); }

  Jitter jitter_;
  absl::Duration backoff_ = absl::ZeroDuration();
  absl::Time established_at_ = absl::InfiniteFuture();  // none yet
};

}  // namespace relay::gateway
