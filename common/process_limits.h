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
// could not be raised. Call once at start. Returns the soft limit it runs with (0 if unknown).
uint64_t RaiseOpenFileLimitAndLog();

// The descriptors ConnectionsWithin keeps back from connections (a quarter of a limit under
// 1,024 instead).
inline constexpr uint64_t kReservedDescriptors = 256;

// How many connections a server may hold within a descriptor limit: all but a reserve for
// itself (its links, listeners, log) and for answering a connection over the count instead of
// failing to accept it. At least 1; a limit of 0 (unknown) bounds nothing.
int64_t ConnectionsWithin(uint64_t descriptor_limit);

}  // namespace relay::common
