#pragma once

#include <atomic>
#include <cstdint>

#include "absl/time/time.h"

namespace relay::authsvc {

// Hands out the generations of redeemed tickets (RedeemTicketResponse.generation):
// the router keeps an account's newest tab by comparing them, so they must
// grow with real time across gateways and across authsvc restarts, and never
// repeat. Microseconds of the wall clock, stepped past the last one handed
// out (a clock that steps back, or two redemptions in one microsecond, still
// get increasing numbers). Thread-safe.
class TabOrder {
 public:
  uint64_t Next(absl::Time now) {
    const uint64_t wall = static_cast<uint64_t>(absl::ToUnixMicros(now));
    uint64_t last = last_.load(std::memory_order_relaxed);
    uint64_t next;
    do {
      next = wall > last ? wall : last + 1;
    } while (!last_.compare_exchange_weak(last, next, std::memory_order_relaxed));
    return next;
  }

 private:
  std::atomic<uint64_t> last_{0};
};

}  // namespace relay::authsvc
