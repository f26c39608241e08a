#pragma once

#include "absl/status/statusor.h"

namespace relay::common {

// Puts every thread of this process under SCHED_BATCH (threads started later inherit it from
// the thread that starts them). A batch thread that is woken does not take the core from the
// thread running there; it waits until that thread sleeps or its time slice ends. The relay's
// services wake one another for every call (agent -> gateway -> router -> gateway -> tab and
// back), and on one host each wake-up otherwise put the writer off its core just before it
// would have slept anyway: an extra pair of context switches (docs/performance.md, "The
// services stop preempting one another"). Needs no privilege. Returns how many threads it set;
// on an error, the threads walked before it stay set. Meant to be called before other threads
// start: one started or ended during the walk may be missed (the services call it first thing).
absl::StatusOr<int> RunAsBatch();

// Calls RunAsBatch when --sched_batch (RELAY_SCHED_BATCH) is set, and logs what it did or why
// it could not. Call once at start, before any thread is started.
void ApplySchedulingFlagAndLog();

}  // namespace relay::common
