#pragma once

#include <chrono>

#include "absl/time/time.h"

namespace relay::common {

// Now, from the monotonic clock, as an absl::Time: for how long things are
// kept (verdicts, lock-outs), which a step of the wall clock (NTP, an
// operator) must not stretch or cut. Compare it only with itself.
inline absl::Time MonotonicNow() {
  return absl::UnixEpoch() + absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
}

}  // namespace relay::common
