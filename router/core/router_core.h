#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/time/time.h"
#include "relay/v1/router.pb.h"
#include "router/core/call_table.h"
#include "router/core/fanout_budget.h"
#include "router/core/kept_answers.h"
#include "router/core/outbox.h"
#include "router/core/routing_table.h"
#include "router/core/session_table.h"

namespace relay::router {


struct RouterCoreOptions {
  SessionTableOptions sessions;
  // Calls in flight per account; beyond, a call fails at once with a reason.
  size_t max_inflight_per_account = 256;
  // A 2026-07-28 call's requests to the agent kept at once; more are refused
  // to the tab (ARCHITECTURE.md "Limits").
  size_t max_pending_requests = 8;
  // ... and their bytes (a sampling request may carry images; the 2025 era
  // keeps none of them).
  size_t max_pending_bytes = 2 << 20;
  // Tabs' final answers to 2026-07-28 calls kept for the agent's retry
  // (KeptAnswers): at most this many and bytes, each for the call's park TTL,
  // or this long when it came before the park.
  size_t max_kept_answers = 10000;
  size_t max_kept_bytes = 64 << 20;
  absl::Duration kept_answer_ttl = absl::Seconds(60);
  // Notifications an account may fan out to its agents' streams (FanoutBudget):
  // bytes a second, and a burst. Beyond, its streams are ended to resume by replay.
  size_t fanout_bytes_per_second = 8 << 20;
  size_t fanout_burst_bytes = 32 << 20;
};

// What the router has counted since it started.
struct RouterCounts {
  uint64_t forwards = 0;
  uint64_t results = 0;
  uint64_t errors = 0;
  uint64_t no_tab = 0;
  uint64_t tab_gone = 0;
  uint64_t displaced = 0;
  uint64_t cancelled = 0;
  uint64_t too_many = 0;
  uint64_t streams_cut = 0;  // streams ended: their account was over its fan-out budget
};

// The router's rules, joined in one place: which tab is an account's
// (displacement), where each call goes and who may answer it, cancellation,
// fan-out of a tab's notifications to its account's sessions, the view line,
// replay, and what happens when a gateway link ends. Every method takes an
// event and appends the commands it causes to out, in the order they must be
// sent; the caller writes them after the call.
//
// Not thread-safe: RouterHub holds one lock around each call (they are
// short: map operations, no I/O). No gRPC or Asio types, so that whole
// scenarios are unit-tested with a recording outbox.
class RouterCore {
 public:
  RouterCore(uint64_t first_call_id, RouterCoreOptions options = {});

  void LinkUp(uint64_t link_id);
  // The link ended: its tabs leave (their calls fail toward the agents), its
  // streams close, and the calls its agents made are cancelled at their tabs.
  void LinkDown(uint64_t link_id, absl::Time now, Outbox& out);
  // One message of a gateway. The event may be moved from.
  void Handle(uint64_t link_id, relay::v1::GatewayEvent& event, absl::Time now, Outbox& out);

  // Operators and the clock.
  bool Kick(const std::string& account, const std::string& reason, Outbox& out);
  void EndSession(const std::string& session, Outbox& out);
  void Sweep(absl::Time now, Outbox& out);

  // Operators watching the shard (RouterAdmin.Watch): while on, every method
  // also records what happened, for TakeWatchEvents. Off, it costs nothing.
  void set_watched(bool on) { watched_ = on; }
  // What happened since the last take, oldest first (at_unix_ms unset).
  std::vector<relay::v1::WatchEvent> TakeWatchEvents() { return std::exchange(watch_events_, {}); }

  // Read-only views.
  const RoutingTable& tabs() const { return table_; }
  const SessionTable& sessions() const { return sessions_; }
  size_t CallsInFlight(const TabRef& tab) const { return calls_.InFlight(tab); }
  size_t CallsInFlight() const { return calls_.size(); }
  size_t LinkCount() const { return links_.size(); }
  const std::string& GatewayOf(uint64_t link_id) const;
  const RouterCounts& counts() const { return counts_; }

 private:
  void OnTabUp(uint64_t link_id, const relay::v1::TabUp& up, Outbox& out);
  void OnTabReply(uint64_t link_id, relay::v1::TabReply& reply, absl::Time now, Outbox& out);
  // Keeps the tab's final answer of a call between rounds for its retry.
  void KeepAnswer(uint64_t call_id, const Call& call, const relay::v1::TabReply& reply,
                  absl::Time now);
  void OnTabNotification(uint64_t link_id, const relay::v1::TabNotification& note,
                         absl::Time now, Outbox& out);
  void OnTabRequest(uint64_t link_id, relay::v1::TabRequest& request, Outbox& out);
  void OnAgentReply(relay::v1::AgentReply& reply, Outbox& out);
  void OnAgentCancel(const relay::v1::AgentCancel& cancel, Outbox& out);
  void OnCallStart(uint64_t link_id, relay::v1::CallStart& start, Outbox& out);
  void OnCallCancel(uint64_t link_id, const relay::v1::CallCancel& cancel, Outbox& out);
  void OnCallPark(uint64_t link_id, const relay::v1::CallPark& park, absl::Time now);
  void OnCallResume(uint64_t link_id, relay::v1::CallResume& resume, absl::Time now, Outbox& out);
  // Parked calls past their TTL are cancelled in their tabs.
  void ExpireParked(absl::Time now, Outbox& out);

  // The calls of a tab that left end with reason toward their agents.
  void FailCallsOf(const TabRef& tab, relay::v1::Failure::Reason reason, Outbox& out);
  // The call ends with reason toward its agent; account and trace name it for watchers.
  void Fail(const CallOrigin& origin, relay::v1::Failure::Reason reason,
            const std::string& account, const std::string& trace_id, Outbox& out);
  void CancelAtTab(uint64_t call_id, const TabRef& tab, const std::string& reason, Outbox& out);
  // An event of a call for its agent.
  void ToAgent(const Call& call, std::string message, Outbox& out);
  void NotifyAgents(const std::vector<std::string>& accounts, absl::Time now, Outbox& out);
  void Deliver(const std::vector<StreamDelivery>& deliveries, Outbox& out);
  // A notification fanned out to the account's streams, within its budget;
  // over it, those streams end instead (they resume by replay).
  void Fanout(const std::string& account, const std::vector<StreamDelivery>& deliveries,
              absl::Time now, Outbox& out);
  // A new watch event of kind, or null when nobody watches.
  relay::v1::WatchEvent* Watch(relay::v1::WatchEvent::Kind kind);
  void WatchTab(relay::v1::WatchEvent::Kind kind, const std::string& account, const TabRef& tab,
                const std::string& reason);

  RouterCoreOptions options_;
  RoutingTable table_;
  SessionTable sessions_;
  CallTable calls_;
  absl::flat_hash_map<uint64_t, std::string> links_;  // link id -> gateway id
  RouterCounts counts_;
  bool watched_ = false;
  std::vector<relay::v1::WatchEvent> watch_events_;
  // Parked 2026-07-28 calls (waiting in their tab for the agent's retry).
  absl::flat_hash_set<uint64_t> parked_;
  KeptAnswers kept_;
  FanoutBudget fanout_;
};

// The reason's name as operators read it ("no_tab", "tab_gone", ...).
const char* FailureName(relay::v1::Failure::Reason reason);

}  // namespace relay::router
