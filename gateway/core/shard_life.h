#pragma once

#include <optional>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gateway/core/relink_policy.h"

namespace relay::gateway {

// The life of one router shard's link as a gateway sees it, as one state that
// every event moves (docs/architecture.md, "The link"):
//
//   kIdle ─Begin→ kAdmitting ─Admitted→ kLinking ─Established→ kUp
//                    ↑   └─AdmissionFailed─┐          └──LinkEnded──┤
//                    └──────AlarmFired── kWaiting ←─────────────────┘
//
// Stop() may come in any state; the shard may go once stopped() (nothing of
// it in flight: no admission, link or alarm). Each event answers what the
// shard must do next (ask for admission, connect, set the relink alarm for a
// wait its RelinkPolicy decides). An event that does not belong to the state
// (a stale one) changes nothing.
//
// Plain C++: time comes with the events and randomness with the policy. Not
// thread-safe (the shard's lock covers it).
class ShardLife {
 public:
  enum class State {
    kIdle,       // made, not begun
    kAdmitting,  // OpenLink in flight, or its answer being acted on
    kLinking,    // the link connects, and the router admits it
    kUp,         // the router admitted the link: calls go
    kWaiting,    // the relink alarm is set
    kStopped,    // stopped, and nothing in flight
  };
  // What Stop() asks of the shard.
  enum class StopAction { kNone, kCancelAlarm, kCloseLink };

  explicit ShardLife(RelinkPolicy policy) : policy_(std::move(policy)) {}

  State state() const { return state_; }
  bool up() const { return state_ == State::kUp; }
  // Nothing of the shard in flight, and no more will be: it may go.
  bool stopped() const { return state_ == State::kStopped && announcing_ == 0; }
  bool stopping() const { return stopping_; }

  // At start. True: ask for admission now.
  bool Begin();
  // OpenLink failed with code. The wait before the relink alarm fires; none
  // when stopping (the shard is stopped then).
  std::optional<absl::Duration> AdmissionFailed(absl::StatusCode code);
  // The router admitted the link over gRPC. True: connect it, announce the
  // shard's tabs and streams on it, then call Announced(); false when
  // stopping (the link is never connected; the shard is stopped).
  bool Admitted();
  // The announcement after Admitted() is done: until then the shard is not
  // stopped, whatever its link does (the announcement reaches into the
  // gateway's sessions, which must not outlive it).
  void Announced() { --announcing_; }
  // The router admitted the link on the link itself, at now.
  void Established(absl::Time now);
  // The link ended at now. The wait before the relink alarm fires; none when
  // stopping (the shard is stopped then).
  std::optional<absl::Duration> LinkEnded(absl::Time now);
  // The relink alarm fired. True: ask for admission now.
  bool AlarmFired();
  // The relink alarm was cancelled: by Stop, or by its queue shutting down
  // (then nothing is in flight, and a Stop later ends at once).
  void AlarmCancelled();
  // No more links from here; what to end so that the shard becomes stopped.
  StopAction Stop();

 private:
  // Where an event that ends something in flight leads: kStopped when
  // stopping, else to.
  State Settle(State to) const { return stopping_ ? State::kStopped : to; }

  RelinkPolicy policy_;
  State state_ = State::kIdle;
  bool stopping_ = false;
  int announcing_ = 0;  // announcements under way (one, but for a link that failed at once)
};

}  // namespace relay::gateway
