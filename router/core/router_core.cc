#include "router/core/router_core.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace relay::router {

using relay::v1::Failure;
using relay::v1::GatewayEvent;
using relay::v1::RouterCommand;
using relay::v1::WatchEvent;

RouterCore::RouterCore(uint64_t first_call_id, RouterCoreOptions options)
    : options_(options), sessions_(options.sessions), calls_(first_call_id),
      kept_(options.max_kept_answers, options.max_kept_bytes),
      fanout_(options.fanout_bytes_per_second, options.fanout_burst_bytes) {}

void RouterCore::LinkUp(uint64_t link_id) { links_.try_emplace(link_id); }

const std::string& RouterCore::GatewayOf(uint64_t link_id) const {
  static const std::string kNone;
  auto it = links_.find(link_id);
  return it == links_.end() ? kNone : it->second;
}

void RouterCore::LinkDown(uint64_t link_id, absl::Time now, Outbox& out) {
  if (WatchEvent* event = Watch(WatchEvent::LINK_DOWN)) {
    event->set_gateway_id(GatewayOf(link_id));
  }
  for (const TabRecord& tab : table_.DetachLink(link_id)) {
    WatchTab(WatchEvent::TAB_DOWN, tab.account, tab.ref, "its gateway's link ended");
    FailCallsOf(tab.ref, Failure::REASON_TAB_GONE, out);
  }
  links_.erase(link_id);
  // The agents of these calls are gone with their gateway: their tabs stop.
  for (auto& [call_id, call] : calls_.TakeAllFrom(link_id)) {
    CancelAtTab(call_id, call.tab, "the agent's gateway went away", out);
  }
  NotifyAgents(sessions_.CloseLink(link_id, now), now, out);
  // Nothing more goes to the link itself.
  out.EraseFor(link_id);
}

void RouterCore::Handle(uint64_t link_id, GatewayEvent& event, absl::Time now, Outbox& out) {
  switch (event.event_case()) {
    case GatewayEvent::kHello:
      links_[link_id] = event.hello().gateway_id();
      if (WatchEvent* up = Watch(WatchEvent::LINK_UP)) {
        up->set_gateway_id(event.hello().gateway_id());
      }
      break;
    case GatewayEvent::kTabUp:
      OnTabUp(link_id, event.tab_up(), out);
      break;
    case GatewayEvent::kTabDown: {
      TabRef ref{link_id, event.tab_down().tab_id()};
      std::optional<std::string> account = table_.AccountOf(ref);
      if (table_.Detach(ref)) {
        WatchTab(WatchEvent::TAB_DOWN, account.value_or(""), ref, "the tab disconnected");
        FailCallsOf(ref, Failure::REASON_TAB_GONE, out);
      }
      break;
    }
    case GatewayEvent::kTabReply:
      OnTabReply(link_id, *event.mutable_tab_reply(), now, out);
      break;
    case GatewayEvent::kSessionTouch: {
      const auto& touch = event.session_touch();
      // First seen, and not ended (a touch that raced the end is ignored).
      if (watched_ && !sessions_.Contains(touch.session_id()) &&
          !sessions_.IsEnded(touch.session_id())) {
        if (WatchEvent* opened = Watch(WatchEvent::SESSION_OPENED)) {
          opened->set_account(touch.account());
          opened->set_session_id(touch.session_id());
        }
      }
      NotifyAgents(sessions_.Touch(touch.session_id(), touch.account(), now), now, out);
      break;
    }
    case GatewayEvent::kSessionEnd:
      EndSession(event.session_end().session_id(), out);
      break;
    case GatewayEvent::kStreamOpen: {
      const auto& open = event.stream_open();
      std::vector<std::string> changed;
      if (open.confirm()) {
        // Ahead of anything for the stream on this link: its agent hears the
        // acknowledgement first, then all that the router fans out from now on.
        AddCommand(out, link_id).mutable_stream_opened()->set_stream_id(open.stream_id());
      }
      Deliver(sessions_.OpenStream(open.session_id(), open.account(),
                                   StreamRef{link_id, open.stream_id()}, open.last_event_id(), now,
                                   &changed),
              out);
      NotifyAgents(changed, now, out);
      break;
    }
    case GatewayEvent::kStreamClose:
      NotifyAgents(sessions_.CloseStream(event.stream_close().session_id(),
                                         StreamRef{link_id, event.stream_close().stream_id()},
                                         now),
                   now, out);
      break;
    case GatewayEvent::kSessionSubscribe: {
      const auto& sub = event.session_subscribe();
      sessions_.Subscribe(sub.session_id(), sub.account(), sub.uri(), sub.subscribe(), now);
      break;
    }
    case GatewayEvent::kSessionLogLevel: {
      const auto& level = event.session_log_level();
      sessions_.SetLogLevel(level.session_id(), level.account(), LogLevelRank(level.level()), now);
      break;
    }
    case GatewayEvent::kTabNotification:
      OnTabNotification(link_id, event.tab_notification(), now, out);
      break;
    case GatewayEvent::kTabRequest:
      OnTabRequest(link_id, *event.mutable_tab_request(), out);
      break;
    case GatewayEvent::kAgentReply:
      OnAgentReply(*event.mutable_agent_reply(), out);
      break;
    case GatewayEvent::kAgentCancel:
      OnAgentCancel(event.agent_cancel(), out);
      break;
    case GatewayEvent::kCallStart:
      OnCallStart(link_id, *event.mutable_call_start(), out);
      break;
    case GatewayEvent::kCallCancel:
      OnCallCancel(link_id, event.call_cancel(), out);
      break;
    case GatewayEvent::kCallPark:
      OnCallPark(link_id, event.call_park(), now);
      break;
    case GatewayEvent::kCallResume:
      OnCallResume(link_id, *event.mutable_call_resume(), now, out);
      break;
    case GatewayEvent::EVENT_NOT_SET:
      break;
  }
}

void RouterCore::OnTabUp(uint64_t link_id, const relay::v1::TabUp& up, Outbox& out) {
  if (up.account().empty()) {
    return;
  }
  TabRef ref{link_id, up.tab_id()};
  TabRecord record;
  record.ref = ref;
  record.account = up.account();
  record.role = up.role();
  record.gateway_id = GatewayOf(link_id);
  record.client_name = up.client_name();
  record.client_version = up.client_version();
  record.connected_at = absl::Now();
  record.generation = up.generation();
  record.resumed_at = up.resumed_at();
  AttachResult attach = table_.Attach(std::move(record));
  if (!attach.attached) {
    // An older tab announced after a newer one (its gateway relinked, or its
    // announcement was late): the newer one keeps the account, and this one
    // is told, as a tab that was taken over is.
    WatchTab(WatchEvent::TAB_DISPLACED, up.account(), ref, "a newer tab of the account holds it");
    auto* displace = AddCommand(out, link_id).mutable_displace();
    displace->set_tab_id(up.tab_id());
    displace->set_reason("another tab switched the agent on");
    return;
  }
  if (WatchEvent* event = Watch(WatchEvent::TAB_UP)) {
    event->set_account(up.account());
    event->set_gateway_id(GatewayOf(link_id));
    event->set_tab_id(up.tab_id());
    event->set_client(up.client_name());
  }
  if (const std::optional<TabRecord>& displaced = attach.displaced) {
    WatchTab(WatchEvent::TAB_DISPLACED, displaced->account, displaced->ref,
             "another tab switched the agent on");
    FailCallsOf(displaced->ref, Failure::REASON_DISPLACED, out);
    auto* displace = AddCommand(out, displaced->ref.link_id).mutable_displace();
    displace->set_tab_id(displaced->ref.tab_id);
    displace->set_reason("another tab switched the agent on");
  }
  if (up.live()) {
    return;  // a re-announcement of a tab at work: nothing to accept
  }
  auto* accepted = AddCommand(out, link_id).mutable_tab_accepted();
  accepted->set_tab_id(up.tab_id());
  accepted->set_agents(sessions_.AgentCount(up.account(), absl::Now()));
}

void RouterCore::OnCallStart(uint64_t link_id, relay::v1::CallStart& start, Outbox& out) {
  ++counts_.forwards;
  CallOrigin origin{link_id, start.call_ref()};
  if (sessions_.IsEnded(start.session_id())) {
    return Fail(origin, Failure::REASON_SESSION_ENDED, start.account(), start.trace_id(), out);
  }
  std::optional<TabRef> tab = table_.Find(start.account());
  if (!tab) {
    ++counts_.no_tab;
    return Fail(origin, Failure::REASON_NO_TAB, start.account(), start.trace_id(), out);
  }
  if (calls_.InFlightOf(start.account()) >= options_.max_inflight_per_account) {
    ++counts_.too_many;
    return Fail(origin, Failure::REASON_TOO_MANY_CALLS, start.account(), start.trace_id(), out);
  }
  Call call;
  call.tab = *tab;
  call.origin = origin;
  call.account = start.account();
  call.session = start.session_id();
  call.request_id = start.request_id();
  call.progress_token = start.progress_token();
  call.is_tool_call = start.method() == "tools/call";
  call.trace_id = start.trace_id();
  call.stateless = start.stateless();
  uint64_t call_id = calls_.Add(std::move(call));
  auto* deliver = AddCommand(out, tab->link_id).mutable_deliver();
  deliver->set_tab_id(tab->tab_id);
  deliver->set_call_id(call_id);
  deliver->set_trace_id(std::move(*start.mutable_trace_id()));
  deliver->set_method(std::move(*start.mutable_method()));
  deliver->set_params(std::move(*start.mutable_params()));
}

void RouterCore::OnCallCancel(uint64_t link_id, const relay::v1::CallCancel& cancel,
                              Outbox& out) {
  uint64_t call_id = calls_.FindByOrigin(CallOrigin{link_id, cancel.call_ref()});
  std::optional<Call> call = calls_.Take(call_id);
  if (!call) {
    return;  // answered meanwhile: the answer is on its way and will be dropped
  }
  ++counts_.cancelled;
  const std::string& reason =
      cancel.reason().empty() ? "the agent cancelled the request" : cancel.reason();
  if (WatchEvent* event = Watch(WatchEvent::CALL_FAILED)) {
    event->set_account(call->account);
    event->set_trace_id(call->trace_id);
    event->set_reason(absl::StrCat("cancelled: ", reason));
  }
  CancelAtTab(call_id, call->tab, reason, out);
}

void RouterCore::OnTabReply(uint64_t link_id, relay::v1::TabReply& reply, absl::Time now,
                            Outbox& out) {
  const Call* found = calls_.Find(reply.call_id());
  // Only the tab that holds the call may answer it.
  if (found == nullptr || !(found->tab == TabRef{link_id, reply.tab_id()})) {
    return;  // ended meanwhile (cancelled, timed out), or not this tab's
  }
  Call call = *calls_.Take(reply.call_id());
  parked_.erase(reply.call_id());
  if (call.stateless && (call.parked || call.asked)) {
    KeepAnswer(reply.call_id(), call, reply, now);
  }
  if (call.parked) {
    return;  // nobody waits: the agent's retry takes the kept answer
  }
  auto* done = AddCommand(out, call.origin.link_id).mutable_call_done();
  done->set_call_ref(call.origin.call_ref);
  if (reply.is_error()) {
    ++counts_.errors;
    done->set_error(std::move(*reply.mutable_payload()));
    return;
  }
  ++counts_.results;
  if (call.is_tool_call) {
    done->set_view_line(sessions_.TakePendingLine(call.session));
  }
  done->set_result(std::move(*reply.mutable_payload()));
}

bool RouterCore::Kick(const std::string& account, const std::string& reason, Outbox& out) {
  std::optional<TabRef> tab = table_.Find(account);
  if (!tab || !table_.Detach(*tab)) {
    return false;
  }
  WatchTab(WatchEvent::TAB_DISPLACED, account, *tab, reason);
  FailCallsOf(*tab, Failure::REASON_DISPLACED, out);
  auto* displace = AddCommand(out, tab->link_id).mutable_displace();
  displace->set_tab_id(tab->tab_id);
  displace->set_reason(reason);
  return true;
}

void RouterCore::EndSession(const std::string& session, Outbox& out) {
  if (watched_ && !sessions_.IsEnded(session)) {  // once, not on a repeated end
    if (WatchEvent* event = Watch(WatchEvent::SESSION_ENDED)) {
      event->set_account(sessions_.AccountOf(session));
      event->set_session_id(session);
    }
  }
  NotifyAgents(sessions_.End(session), absl::Now(), out);
  for (const auto& [link_id, gateway] : links_) {
    AddCommand(out, link_id).mutable_session_ended()->set_session_id(session);
  }
}

void RouterCore::Sweep(absl::Time now, Outbox& out) {
  NotifyAgents(sessions_.Sweep(now), now, out);
  ExpireParked(now, out);
  kept_.Expire(now);
  fanout_.Sweep(now);
}

void RouterCore::FailCallsOf(const TabRef& tab, Failure::Reason reason, Outbox& out) {
  for (auto& [call_id, call] : calls_.TakeAllOf(tab)) {
    Fail(call.origin, reason, call.account, call.trace_id, out);
  }
}

void RouterCore::Fail(const CallOrigin& origin, Failure::Reason reason,
                      const std::string& account, const std::string& trace_id, Outbox& out) {
  if (origin.link_id == 0) {
    return;  // a parked call: its retry hears that it is no longer pending
  }
  if (WatchEvent* event = Watch(WatchEvent::CALL_FAILED)) {
    event->set_account(account);
    event->set_trace_id(trace_id);
    event->set_reason(FailureName(reason));
  }
  switch (reason) {
    case Failure::REASON_TAB_GONE:
      ++counts_.tab_gone;
      break;
    case Failure::REASON_DISPLACED:
      ++counts_.displaced;
      break;
    default:
      break;
  }
  auto* done = AddCommand(out, origin.link_id).mutable_call_done();
  done->set_call_ref(origin.call_ref);
  done->mutable_failure()->set_reason(reason);
}

void RouterCore::CancelAtTab(uint64_t call_id, const TabRef& tab, const std::string& reason,
                             Outbox& out) {
  auto* cancel = AddCommand(out, tab.link_id).mutable_cancel();
  cancel->set_tab_id(tab.tab_id);
  cancel->set_call_id(call_id);
  cancel->set_reason(reason);
}

void RouterCore::ToAgent(const Call& call, std::string message, Outbox& out) {
  if (call.parked) {
    return;  // its events wait for the retry (progress and logs are dropped)
  }
  auto* event = AddCommand(out, call.origin.link_id).mutable_call_event();
  event->set_call_ref(call.origin.call_ref);
  event->set_message(std::move(message));
}

WatchEvent* RouterCore::Watch(WatchEvent::Kind kind) {
  if (!watched_) {
    return nullptr;
  }
  // Bounded between two takes (the hub takes after every entry point); a
  // link's batch of thousands of events is still far below this.
  if (watch_events_.size() >= 100000) {
    return nullptr;
  }
  watch_events_.emplace_back().set_kind(kind);
  return &watch_events_.back();
}

void RouterCore::WatchTab(WatchEvent::Kind kind, const std::string& account, const TabRef& tab,
                          const std::string& reason) {
  if (WatchEvent* event = Watch(kind)) {
    event->set_account(account);
    event->set_gateway_id(GatewayOf(tab.link_id));
    event->set_tab_id(tab.tab_id);
    event->set_reason(reason);
  }
}

const char* FailureName(Failure::Reason reason) {
  switch (reason) {
    case Failure::REASON_NO_TAB:
      return "no_tab";
    case Failure::REASON_TAB_GONE:
      return "tab_gone";
    case Failure::REASON_DISPLACED:
      return "displaced";
    case Failure::REASON_CANCELLED:
      return "cancelled";
    case Failure::REASON_SESSION_ENDED:
      return "session_ended";
    case Failure::REASON_TOO_MANY_CALLS:
      return "too_many_calls";
    case Failure::REASON_NOT_PENDING:
      return "not_pending";
    default:
      return "unspecified";
  }
}

}  // namespace relay::router
