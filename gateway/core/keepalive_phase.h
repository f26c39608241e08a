#pragma once

#include <chrono>

namespace relay::gateway {

// When a connection's first keep-alive goes out (a tab's ping, a stream's
// comment); the rest follow a period apart. Connections that arrive together
// (a killed gateway's tabs coming back through the load balancer within a
// second or two, a fleet of agents reopening their streams after a deploy)
// would otherwise keep their keep-alives in step for as long as they live:
// every period, all their pings, the tabs' pongs and the credentials renewed
// on the same tick, in the second the storm lasted. The first is drawn from the
// second half of the period instead, so that such a storm's keep-alives spread
// over half a period, and no connection is pinged sooner than half a period
// after it arrived (a tab's silence is still judged over whole periods:
// TAB-PROTOCOL.md's "misses two" holds).
//
// Plain C++: the draw is given to it, so it is tested without a clock.
class KeepAlivePhase {
 public:
  // draw is in [0, 1): where in the second half of period the first tick falls.
  static std::chrono::milliseconds First(std::chrono::milliseconds period, double draw);
  // The same with a draw of this thread's generator (seeded by the system's
  // randomness; a generator per thread, so no lock).
  static std::chrono::milliseconds First(std::chrono::milliseconds period);
};

}  // namespace relay::gateway
