#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"

namespace relay::v1 {
class GatewayEvent;
class RouterCommand;
}  // namespace relay::v1

namespace relay::gateway {

// How a forwarded call ended, as the agent's gateway sees it.
struct ForwardOutcome {
  enum class Kind {
    kResult,             // payload: the tab's "result" JSON
    kError,              // payload: the tab's "error" JSON
    kNoTab,              // no tab of the account is connected
    kTabGone,            // the tab disconnected mid-call
    kDisplaced,          // another tab took over mid-call
    kTimeout,            // the call's deadline passed
    kCancelled,          // cancelled (agent's notifications/cancelled, or it went away)
    kRouterUnavailable,  // the account's router shard could not be reached
    kSessionEnded,       // the session was ended (DELETE) meanwhile
    kTooManyCalls,       // the account has too many calls in flight
    kShuttingDown,       // this gateway's drain deadline passed first
    kNotPending,         // a retry's call is no longer waiting for it
    kInputRequired,      // answered input_required: the call waits in its tab (metrics only)
  };
  static constexpr size_t kKinds = 13;
  // The kind's name in metrics and logs ("no_tab", ...).
  static const char* Name(Kind kind) {
    static constexpr const char* kNames[kKinds] = {
        "result",  "error",     "no_tab",             "tab_gone",      "displaced",
        "timeout", "cancelled", "router_unavailable", "session_ended", "too_many_calls",
        "shutting_down", "not_pending", "input_required"};
    return kNames[static_cast<size_t>(kind)];
  }
  Kind kind = Kind::kRouterUnavailable;
  std::string payload;
  std::string view_line;  // with kResult of tools/call: the "view changed" line to append
};

struct ForwardRequest {
  std::string account;
  std::string session_id;
  std::string method;
  std::string params;          // JSON text, or empty
  std::string request_id;      // the agent's id, as JSON
  std::string progress_token;  // the relay's token put into params, or empty
  std::string trace_id;        // the relay's id of the call, in every log line about it
  // 2026-07-28: no session; the tab's requests are kept with the call (Park).
  bool stateless = false;
  // A retry of a parked call (resume_call_id != 0): the router's id of the
  // call and the agent's answers (the tab's request id as JSON, the result).
  uint64_t resume_call_id = 0;
  uint32_t resume_round = 0;
  std::vector<std::pair<std::string, std::string>> answers;
};

// Whoever waits for a forwarded call: the agent's HTTP exchange. Called on
// the links' thread (the gateway's first I/O thread; or, for an immediate
// failure or a Cancel, on the caller's):
// an implementation posts to its own executor and returns, and must not call
// back into the RouterClient from these methods. A call's events reach the
// waiter before its OnCallDone.
class CallWaiter {
 public:
  virtual ~CallWaiter() = default;
  // A message of the tab for the agent before the answer (JSON-RPC text), of
  // the call Forward returned call_ref for: a waiter that forwards one call
  // after another drops the events of a call it no longer waits for (parked,
  // or cancelled), which may reach it after it moved on.
  virtual void OnCallEvent(uint64_t call_ref, std::string message) = 0;
  // Exactly once, last.
  virtual void OnCallDone(ForwardOutcome outcome) = 0;
};

// What the router shards send this gateway (everything but the calls' own
// events, which go to their CallWaiter). Called on the links' thread (the first
// I/O thread), link starts on the CqLoop thread where the shard's admission
// (Router.OpenLink) is answered: an implementation posts to the session's
// executor and returns.
class RouterCommandSink {
 public:
  virtual ~RouterCommandSink() = default;
  // Around the commands of one batch a link read (and its calls' ends): what
  // they hand to the I/O threads may go out together once the batch is done.
  virtual void BeginBatch() {}
  virtual void EndBatch() {}
  virtual void OnCommand(relay::v1::RouterCommand& command) = 0;
  // The link to a shard ended: the calls of its tabs are lost, and its tabs
  // and streams must be announced again when it comes back (OnLinkUp).
  virtual void OnLinkDown(size_t shard) = 0;
  virtual void OnLinkUp(size_t shard) = 0;
};

// The gateway's view of the router shards: one long-lived link per shard that
// carries every event and call. Thread-safe. Each account's traffic goes to
// the shard that ShardOf names.
class RouterClient {
 public:
  enum class CancelReason { kAgentGone, kDeadline, kShutdown };
  virtual ~RouterClient() = default;

  // Sends an event on the account's shard's link; dropped while it is down
  // (the gateway re-announces what matters when it is back).
  virtual void Send(const std::string& account, const relay::v1::GatewayEvent& event) = 0;

  // Forwards one request to the account's tab. Returns the call's reference
  // for Cancel. waiter hears each event, then exactly one OnCallDone; at once
  // (kRouterUnavailable) when the shard's link is down.
  virtual uint64_t Forward(ForwardRequest request, std::shared_ptr<CallWaiter> waiter) = 0;
  // Ends a call from the agent's side: the tab is told, the waiter hears
  // kTimeout or kCancelled. Nothing happens if the call has ended.
  // Returns false when the call had ended meanwhile (its outcome is on its way).
  virtual bool Cancel(const std::string& account, uint64_t call_ref, CancelReason reason) = 0;
  // A stateless call's agent was answered input_required: the call stays in
  // its tab, parked at the router for ttl, until a retry (from any gateway)
  // resumes it. The waiter hears nothing more.
  // False when the call had ended meanwhile (its outcome is on its way to the
  // waiter): then nothing is parked.
  virtual bool Park(const std::string& account, uint64_t call_ref, uint32_t round,
                    absl::Duration ttl) = 0;

  // The drain: how many calls of this gateway's agents wait for an answer,
  // and ending them all (each waiter hears the reason's outcome, each tab a
  // cancellation).
  virtual size_t CallsInFlight() const = 0;
  // Whether every event queued so far has been written to its link (the
  // drain waits for it before the process ends).
  virtual bool Flushed() const = 0;
  virtual void CancelAll(CancelReason reason) = 0;

  virtual size_t ShardOf(const std::string& account) const = 0;
  // How many shards have a live link now (readiness).
  virtual size_t ShardsUp() const = 0;
};

}  // namespace relay::gateway
