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
  // The pace at which calls leave while others wait is measured over this many of them; once
  // it is known, a call that could not start within most_wait at that pace is refused at once
  // rather than after most_wait.
  size_t pace_window = 64;
};

// Bounds the calls a client has in flight to a service and queues the rest in order of
// arrival (issue 29: 19,000 tabs reconnecting at once held 19,000 verifications in flight,
// some 300 MiB, and what they freed stayed resident between the connections that remained).
// A call either starts now, waits for a place, or is refused: the queue is full, or the pace at
// which calls have left while others waited says it would wait longer than most_wait (a storm
// of 19,000 tabs against a host API that redeems some hundreds a second kept thousands of
// connections 10 s each only to refuse them then). A call that ends hands its place to the
// next that waited, and refuses those that waited too long.
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

  explicit CallGate(CallGateOptions options = {})
      : options_(options), leaves_(options.pace_window) {}

  // kStartNow: the caller starts call now (it holds a place until Leave). kWaiting: the gate
  // keeps call (moved from). kRefused: the caller refuses it. call.since is now.
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
  // Whether a call that would wait at this place in the queue (1: first) is refused at once:
  // at the pace of the last pace_window leaves, counted from the oldest of them to now (so
  // that a service that stopped answering slows the pace too), its turn would come after
  // most_wait. Unknown until pace_window calls have left while others waited.
  bool WouldWaitTooLong(size_t place, absl::Time now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const CallGateOptions options_;
  mutable absl::Mutex mu_;
  size_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  common::Fifo<Waiting> waiting_ ABSL_GUARDED_BY(mu_);
  // When the last pace_window calls left while others waited: a ring, oldest at paced_ %
  // pace_window once full. Only leaves while calls wait tell the pace of the service (a call
  // that leaves an idle gate says only how many were asked); a queue that drains forgets it.
  std::vector<absl::Time> leaves_ ABSL_GUARDED_BY(mu_);
  size_t paced_ ABSL_GUARDED_BY(mu_) = 0;  // leaves recorded since the queue last drained
};

}  // namespace relay::gateway
