#pragma once

#include "absl/time/time.h"

namespace relay::gateway {

// A token bucket: up to `burst` events at once, `per_second` on average.
// Not thread-safe: one per session, used on its I/O thread. Time is passed in.
class RateLimiter {
 public:
  RateLimiter(double per_second, double burst) : rate_(per_second), burst_(burst), tokens_(burst) {}

  // True when an event at `now` is within the limit (and takes a token).
  bool Allow(absl::Time now);

 private:
  double rate_;
  double burst_;
  double tokens_;
  absl::Time last_ = absl::InfinitePast();
};

}  // namespace relay::gateway
