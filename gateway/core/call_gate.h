#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/fifo.h"

namespace relay::gateway {

struct CallGateOptions {
  // Calls in flight at once. A verification in flight holds some 17 KiB of gRPC state at the
  // gateway (its call arena and operations); beyond a few dozen in flight the host API, not the
  // gateway, sets the pace, so more in flight only holds more memory.
  size_t most_in_flight = 64;
  // Calls waiting for a place; beyond, a call is refused at once.
  size_t most_waiting = 100000;
  // A call that waited this long is refused when its turn comes rather than started: its
  // client has been kept long enough (the same as a call's own deadline at authsvc).
  absl::Duration most_wait = absl::Seconds(10);
};

// Bounds the calls a client has in flight to a service and queues the rest in order of
// arrival (issue 29: 19,000 tabs reconnecting at once held 19,000 verifications in flight,
// some 300 MiB, and what they freed stayed resident between the connections that remained).
// A call either starts now, waits for a place, or is refused (the queue is full); a call that
// ends hands its place to the next that waited, and refuses those that waited too long.
// Thread-safe; plain C++; time is passed in. What it returns is run by the caller, outside
// its lock.
class CallGate {
 public:
  // A call that waits: start() is run when it gets a place (and must Leave once it ends);
  // refuse() if it does not.
  struct Waiting {
    std::function<void()> start;
    std::function<void()> refuse;
    absl::Time since;
  };
  enum class Entry { kStartNow, kWaiting, kRefused };

  explicit CallGate(CallGateOptions options = {}) : options_(options) {}

  // kStartNow: the caller starts call now (it holds a place until Leave). kWaiting: the gate
  // keeps call (moved from). kRefused: the caller refuses it.
  Entry Enter(Waiting& call) ABSL_LOCKS_EXCLUDED(mu_);

  struct Released {
    std::optional<Waiting> start;   // takes the place that was left: run start()
    std::vector<Waiting> refused;   // waited too long: run refuse()
  };
  // A call ended: its place goes to the next call that waited.
  Released Leave(absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);

  // Every call still waiting, taken out (for the client's end: refuse them).
  std::vector<Waiting> TakeWaiting() ABSL_LOCKS_EXCLUDED(mu_);

  size_t in_flight() const ABSL_LOCKS_EXCLUDED(mu_);
  size_t waiting() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const CallGateOptions options_;
  mutable absl::Mutex mu_;
  size_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  common::Fifo<Waiting> waiting_ ABSL_GUARDED_BY(mu_);
};

}  // namespace relay::gateway
