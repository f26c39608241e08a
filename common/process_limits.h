#pragma once

#include <cstdint>

#include "absl/status/statusor.h"

namespace relay::common {

// The open-file limit before and after RaiseOpenFileLimit.
struct OpenFileLimit {
  uint64_t before = 0;  // the soft limit the process was started with
  uint64_t now = 0;     // the soft limit it runs with
  uint64_t hard = 0;    // the most it may ever have
};

// Raises the soft limit on open files to the hard one. Every connection a gateway holds is a
// descriptor, and shells and container runtimes often start services at a soft limit of 1,024
// while allowing far more (raising the soft limit up to the hard one needs no privilege).
absl::StatusOr<OpenFileLimit> RaiseOpenFileLimit();

// RaiseOpenFileLimit, logged: the limit it runs with (and what it was), or a warning that it
// could not be raised. Call once at start.
void RaiseOpenFileLimitAndLog();

}  // namespace relay::common
