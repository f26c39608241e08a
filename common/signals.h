#pragma once

namespace relay::common {

// Blocks SIGINT and SIGTERM in the calling thread and every thread it starts
// later: call first thing in main. WaitForStopSignal then takes them
// synchronously, so no handler runs in an arbitrary thread. Also ignores
// SIGPIPE: a write to a closed socket fails with EPIPE instead.
void BlockStopSignals();

// Blocks until SIGINT or SIGTERM arrives.
void WaitForStopSignal();

}  // namespace relay::common
