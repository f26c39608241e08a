#include "gateway/core/relink_policy.h"

#include <algorithm>
#include <memory>
#include <random>

namespace relay::gateway {

RelinkPolicy::Jitter RelinkPolicy::RandomJitter() {
  auto rng = std::make_shared<std::mt19937>(std::random_device{}());
  return [rng] { return std::uniform_real_distribution<double>(0.5, 1.5)(*rng); };
}

absl::Duration RelinkPolicy::Doubled() {
  backoff_ = std::clamp(backoff_ * 2, kFirst, kMost);
  return backoff_;
}

absl::Duration RelinkPolicy::AfterAdmissionFailed(absl::StatusCode code) {
  const bool down_or_slow =
      code == absl::StatusCode::kUnavailable || code == absl::StatusCode::kDeadlineExceeded;
  if (!down_or_slow) {
    backoff_ = kMost;  // refused: asking again sooner will not change its mind
    return Jittered(backoff_);
  }
  return Jittered(Doubled());
}

absl::Duration RelinkPolicy::AfterLinkEnded(absl::Time now) {
  const bool held = now - established_at_ >= kHeld;
  established_at_ = absl::InfiniteFuture();
  if (held) {
    backoff_ = kFirst;
    return Jittered(backoff_);
  }
  return Jittered(Doubled());
}

}  // namespace relay::gateway
