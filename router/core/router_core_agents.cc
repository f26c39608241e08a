// RouterCore, the agents' side: what a tab sends toward its account's agent
// sessions (notifications, requests to agents) and their answers, the view
// line's fan-out, and deliveries to streams. The rest of the rules are in
// router_core.cc.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "router/core/router_core.h"

namespace relay::router {

using relay::v1::Failure;
using relay::v1::RouterCommand;
using relay::v1::WatchEvent;

namespace {

std::string Notification(absl::string_view method, absl::string_view params) {
  return absl::StrCat(R"({"jsonrpc":"2.0","method":")", method, R"(","params":)",
                      params.empty() ? "{}" : params, "}");
}

// The notifications a tab may send toward agents; anything else is dropped by
// the gateway before it gets here.
bool IsListChanged(absl::string_view method) {
  return method == "notifications/resources/list_changed" ||
         method == "notifications/tools/list_changed" ||
         method == "notifications/prompts/list_changed";
}

}  // namespace

void RouterCore::OnTabNotification(uint64_t link_id, const relay::v1::TabNotification& note,
                                   absl::Time now, Outbox& out) {
  TabRef tab{link_id, note.tab_id()};
  std::optional<std::string> account = table_.AccountOf(tab);
  if (!account) {
    return;  // displaced or gone: its news are stale
  }
  const std::string& method = note.method();
  std::string message = Notification(method, note.params());
  if (method == "notifications/resources/updated") {
    Fanout(*account, sessions_.ToSubscribers(*account, note.uri(), message), now, out);
    sessions_.SetPendingLine(*account, note.line().empty()
                                           ? absl::StrCat("The view changed: ", note.uri())
                                           : note.line());
  } else if (IsListChanged(method)) {
    Fanout(*account, sessions_.Broadcast(*account, message), now, out);
  } else if (method == "notifications/progress") {
    const Call* call = calls_.Find(calls_.FindByProgressToken(note.progress_token()));
    if (call != nullptr && call->tab == tab) {
      ToAgent(*call, std::move(message), out);
    }
  } else if (method == "notifications/message") {
    if (note.call_id() != 0) {
      const Call* call = calls_.Find(note.call_id());
      if (call != nullptr && call->tab == tab) {
        ToAgent(*call, std::move(message), out);
      }
    } else {
      Fanout(*account, sessions_.ToLogLevel(*account, LogLevelRank(note.level()), message), now,
             out);
    }
  }
}

void RouterCore::OnTabRequest(uint64_t link_id, relay::v1::TabRequest& request, Outbox& out) {
  Call* call = calls_.FindMutable(request.call_id());
  // The two error objects are constants written out: the router's core has no
  // JSON library, and reads no JSON (the gateways' codec builds every other).
  auto refuse = [&](absl::string_view error) {
    auto* response = AddCommand(out, link_id).mutable_tab_response();
    response->set_tab_id(request.tab_id());
    response->set_tab_request_id(request.tab_request_id());
    response->set_is_error(true);
    response->set_payload(std::string(error));
  };
  if (call == nullptr || !(call->tab == TabRef{link_id, request.tab_id()})) {
    return refuse(
        R"({"code":-32602,"message":"no agent call in progress with that relay/requestId"})");
  }
  if (call->stateless) {
    call->asked = true;
    // Kept until answered: the agent answers on a retry, maybe elsewhere.
    if (call->pending.size() >= options_.max_pending_requests ||
        call->pending_bytes + request.message().size() > options_.max_pending_bytes) {
      return refuse(
          R"({"code":-32603,"message":"too many requests to the agent are waiting in this call"})");
    }
    call->pending_bytes += request.message().size();
    call->pending.emplace_back(request.tab_request_id(), request.message());
    if (call->parked) {
      return;  // asked when the retry comes
    }
  }
  ToAgent(*call, std::move(*request.mutable_message()), out);
}

void RouterCore::OnAgentReply(relay::v1::AgentReply& reply, Outbox& out) {
  Call* call = calls_.FindMutable(reply.call_id());
  // Only the session that made the call may answer its tab's requests.
  if (call == nullptr || call->session != reply.session_id() ||
      call->account != reply.account()) {
    return;
  }
  if (call->stateless) {
    // Answered (a refusal, or an answer the agent sent ahead): not asked again.
    auto it = std::find_if(call->pending.begin(), call->pending.end(), [&](const auto& p) {
      return p.first == reply.tab_request_id();
    });
    if (it == call->pending.end()) {
      return;  // answered already
    }
    call->pending_bytes -= it->second.size();
    call->pending.erase(it);
  }
  auto* response = AddCommand(out, call->tab.link_id).mutable_tab_response();
  response->set_tab_id(call->tab.tab_id);
  response->set_tab_request_id(reply.tab_request_id());
  response->set_is_error(reply.is_error());
  response->set_payload(std::move(*reply.mutable_payload()));
}

void RouterCore::OnAgentCancel(const relay::v1::AgentCancel& cancel, Outbox& out) {
  uint64_t call_id = calls_.FindByRequest(cancel.session_id(), cancel.request_id());
  const Call* found = calls_.Find(call_id);
  if (found == nullptr || found->account != cancel.account()) {
    return;
  }
  Call call = *calls_.Take(call_id);
  ++counts_.cancelled;
  CancelAtTab(call_id, call.tab,
              cancel.reason().empty() ? "the agent cancelled the request" : cancel.reason(), out);
  Fail(call.origin, Failure::REASON_CANCELLED, call.account, call.trace_id, out);
}

void RouterCore::NotifyAgents(const std::vector<std::string>& accounts, absl::Time now,
                              Outbox& out) {
  for (const std::string& account : accounts) {
    std::optional<TabRef> tab = table_.Find(account);
    if (!tab) {
      continue;
    }
    auto* agents = AddCommand(out, tab->link_id).mutable_agents();
    agents->set_tab_id(tab->tab_id);
    agents->set_count(sessions_.AgentCount(account, now));
  }
}

void RouterCore::Deliver(const std::vector<StreamDelivery>& deliveries, Outbox& out) {
  for (const StreamDelivery& d : deliveries) {
    auto* event = AddCommand(out, d.stream.link_id).mutable_stream_event();
    event->set_stream_id(d.stream.stream_id);
    event->set_event_id(d.event_id);
    event->set_message(d.message);
  }
}

void RouterCore::Fanout(const std::string& account, const std::vector<StreamDelivery>& deliveries,
                        absl::Time now, Outbox& out) {
  size_t bytes = 0;
  for (const StreamDelivery& d : deliveries) {
    bytes += d.message.size();
  }
  if (fanout_.Spend(account, bytes, now)) {
    return Deliver(deliveries, out);
  }
  // Over its budget: the account's own streams lose this event, nobody
  // else's link waits for it. It is in each session's replay buffer already,
  // so the stream ends (the agent reconnects with Last-Event-ID and gets it)
  // rather than going on with a gap.
  std::vector<std::string> changed;
  for (const StreamDelivery& d : deliveries) {
    ++counts_.streams_cut;
    auto* end = AddCommand(out, d.stream.link_id).mutable_stream_end();
    end->set_stream_id(d.stream.stream_id);
    end->set_reason("the editor sent more notifications than the relay passes on, and some "
                    "were dropped: listen again (a GET stream: reconnect with Last-Event-ID)");
    for (std::string& account_changed : sessions_.CloseStream(d.session, d.stream, now)) {
      changed.push_back(std::move(account_changed));
    }
  }
  NotifyAgents(changed, now, out);
}

}  // namespace relay::router
