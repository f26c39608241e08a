#include "gateway/core/shard_life.h"

namespace relay::gateway {

bool ShardLife::Begin() {
  if (state_ != State::kIdle) {
    return false;
  }
  state_ = Settle(State::kAdmitting);
  return state_ == State::kAdmitting;
}

std::optional<absl::Duration> ShardLife::AdmissionFailed(absl::StatusCode code) {
  if (state_ != State::kAdmitting) {
    return std::nullopt;
  }
  state_ = Settle(State::kWaiting);
  if (state_ != State::kWaiting) {
    return std::nullopt;
  }
  return policy_.AfterAdmissionFailed(code);
}

bool ShardLife::Admitted() {
  if (state_ != State::kAdmitting) {
    return false;
  }
  state_ = Settle(State::kLinking);
  if (state_ != State::kLinking) {
    return false;
  }
  ++announcing_;
  return true;
}

void ShardLife::Established(absl::Time now) {
  if (state_ != State::kLinking || stopping_) {
    return;  // stale, or stopping: the link is being closed
  }
  policy_.Established(now);
  state_ = State::kUp;
}

std::optional<absl::Duration> ShardLife::LinkEnded(absl::Time now) {
  if (state_ != State::kLinking && state_ != State::kUp) {
    return std::nullopt;
  }
  state_ = Settle(State::kWaiting);
  if (state_ != State::kWaiting) {
    return std::nullopt;
  }
  return policy_.AfterLinkEnded(now);
}

bool ShardLife::AlarmFired() {
  if (state_ != State::kWaiting) {
    return false;
  }
  state_ = Settle(State::kAdmitting);
  return state_ == State::kAdmitting;
}

void ShardLife::AlarmCancelled() {
  if (state_ == State::kWaiting) {
    state_ = Settle(State::kIdle);
  }
}

ShardLife::StopAction ShardLife::Stop() {
  stopping_ = true;
  switch (state_) {
    case State::kIdle:
      state_ = State::kStopped;
      return StopAction::kNone;
    case State::kAdmitting:
      return StopAction::kNone;  // its answer settles it (gRPC's deadline bounds the wait)
    case State::kLinking:
    case State::kUp:
      return StopAction::kCloseLink;
    case State::kWaiting:
      return StopAction::kCancelAlarm;
    case State::kStopped:
      return StopAction::kNone;
  }
  return StopAction::kNone;
}

}  // namespace relay::gateway
