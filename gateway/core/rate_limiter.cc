#include "gateway/core/rate_limiter.h"

#include <algorithm>

namespace relay::gateway {

bool RateLimiter::Allow(absl::Time now) {
  if (last_ != absl::InfinitePast()) {
    tokens_ = std::min(burst_, tokens_ + rate_ * absl::ToDoubleSeconds(now - last_));
  }
  last_ = now;
  if (tokens_ < 1) {
    return false;
  }
  tokens_ -= 1;
  return true;
}

}  // namespace relay::gateway
