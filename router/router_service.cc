#include "router/router_service.h"

#include <atomic>
#include <deque>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/log.h"

namespace relay::router {

using relay::v1::ForwardEvent;
using relay::v1::GatewayEvent;
using relay::v1::RouterCommand;

// The write side of one gateway link, shared by every thread that needs to send
// the gateway something (Forward reactors, other links displacing a tab). Keeps
// one write in flight; messages wait in a queue. Outlives its reactor: after the
// link ends, Send drops messages.
class LinkOutbox {
 public:
  explicit LinkOutbox(grpc::ServerBidiReactor<GatewayEvent, RouterCommand>* reactor)
      : reactor_(reactor) {}

  // StartWrite is called under mu_ so that Close() (which precedes Finish and
  // so the reactor's deletion) cannot run between the check and the call.
  void Send(RouterCommand command) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (reactor_ == nullptr) {
      return;
    }
    queue_.push_back(std::move(command));
    if (!writing_) {
      writing_ = true;
      // deque keeps element addresses stable while we append at the back.
      reactor_->StartWrite(&queue_.front());
    }
  }

  // Called from OnWriteDone: the front message is written.
  void OnWritten(bool ok) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    queue_.pop_front();
    if (!ok || reactor_ == nullptr || queue_.empty()) {
      writing_ = false;
      return;
    }
    reactor_->StartWrite(&queue_.front());
  }

  // No more writes are started after this.
  void Close() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    reactor_ = nullptr;
  }

 private:
  absl::Mutex mu_;
  grpc::ServerBidiReactor<GatewayEvent, RouterCommand>* reactor_ ABSL_GUARDED_BY(mu_);
  std::deque<RouterCommand> queue_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
};

namespace {

uint64_t FirstCallId() {
  // Ids of a restarted router start above anything the previous run handed
  // out (unless it sustained a million calls a second), and stay below 2^53 so
  // that a tab in JavaScript reads them exactly.
  return static_cast<uint64_t>(absl::ToUnixMillis(absl::Now())) * 1000;
}

void FailCalls(const std::vector<CallSink*>& sinks, CallOutcome::Kind kind) {
  for (CallSink* sink : sinks) {
    sink->Complete(CallOutcome{kind, {}});
  }
}

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

// One gateway's link. Lives until OnDone.
class LinkReactor final : public grpc::ServerBidiReactor<GatewayEvent, RouterCommand> {
 public:
  LinkReactor(RouterState& state, grpc::CallbackServerContext* context)
      : state_(state), context_(context), outbox_(std::make_shared<LinkOutbox>(this)) {
    link_id_ = state_.AddLink(outbox_);
    // Tells the gateway at once that the link is up (its readiness).
    StartSendInitialMetadata();
    StartRead(&in_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      End();
      return;
    }
    Handle(in_);
    if (!ended_.load()) {
      StartRead(&in_);
    }
  }

  void OnWriteDone(bool ok) override { outbox_->OnWritten(ok); }

  void OnCancel() override { End(); }

  // Reactions may run concurrently (a cancel while a message is handled), so
  // the link's state is torn down here, after every other reaction: nothing
  // that a late message added can outlive the link.
  void OnDone() override {
    End();
    for (const TabRecord& tab : state_.table().DetachLink(link_id_)) {
      FailCalls(state_.calls().TakeAllOf(tab.ref), CallOutcome::Kind::kTabGone);
    }
    state_.NotifyAgents(state_.sessions().CloseLink(link_id_, absl::Now()));
    common::LogInfo("gateway unlinked", {{"gateway", gateway_id_}});
    delete this;
  }

 private:
  void Handle(GatewayEvent& event) {
    absl::Time now = absl::Now();
    SessionTable& sessions = state_.sessions();
    switch (event.event_case()) {
      case GatewayEvent::kHello:
        gateway_id_ = event.hello().gateway_id();
        common::LogInfo("gateway linked", {{"gateway", gateway_id_}, {"peer", context_->peer()}});
        break;
      case GatewayEvent::kTabUp:
        OnTabUp(event.tab_up());
        break;
      case GatewayEvent::kTabDown: {
        TabRef ref{link_id_, event.tab_down().tab_id()};
        state_.table().Detach(ref);
        FailCalls(state_.calls().TakeAllOf(ref), CallOutcome::Kind::kTabGone);
        break;
      }
      case GatewayEvent::kTabReply:
        OnTabReply(*event.mutable_tab_reply());
        break;
      case GatewayEvent::kSessionTouch:
        state_.NotifyAgents(sessions.Touch(event.session_touch().session_id(),
                                           event.session_touch().account(), now));
        break;
      case GatewayEvent::kSessionEnd:
        state_.EndSession(event.session_end().session_id());
        break;
      case GatewayEvent::kStreamOpen: {
        const auto& open = event.stream_open();
        std::vector<std::string> changed;
        state_.Deliver(sessions.OpenStream(open.session_id(), open.account(),
                                           StreamRef{link_id_, open.stream_id()},
                                           open.last_event_id(), now, &changed));
        state_.NotifyAgents(changed);
        break;
      }
      case GatewayEvent::kStreamClose:
        state_.NotifyAgents(sessions.CloseStream(event.stream_close().session_id(),
                                                 StreamRef{link_id_, event.stream_close().stream_id()},
                                                 now));
        break;
      case GatewayEvent::kSessionSubscribe: {
        const auto& sub = event.session_subscribe();
        sessions.Subscribe(sub.session_id(), sub.account(), sub.uri(), sub.subscribe(), now);
        break;
      }
      case GatewayEvent::kSessionLogLevel: {
        const auto& level = event.session_log_level();
        sessions.SetLogLevel(level.session_id(), level.account(), LogLevelRank(level.level()),
                             now);
        break;
      }
      case GatewayEvent::kTabNotification:
        OnTabNotification(event.tab_notification());
        break;
      case GatewayEvent::kTabRequest:
        OnTabRequest(*event.mutable_tab_request());
        break;
      case GatewayEvent::kAgentReply:
        OnAgentReply(*event.mutable_agent_reply());
        break;
      case GatewayEvent::kAgentCancel:
        OnAgentCancel(event.agent_cancel());
        break;
      case GatewayEvent::EVENT_NOT_SET:
        break;
    }
  }

  void OnTabUp(const relay::v1::TabUp& up) {
    if (up.account().empty()) {
      return;
    }
    TabRecord record;
    record.ref = TabRef{link_id_, up.tab_id()};
    record.account = up.account();
    record.role = up.role();
    record.gateway_id = gateway_id_;
    record.client_name = up.client_name();
    record.client_version = up.client_version();
    record.connected_at = absl::Now();
    std::optional<TabRecord> displaced = state_.table().Attach(std::move(record));
    if (displaced && !(displaced->ref == TabRef{link_id_, up.tab_id()})) {
      FailCalls(state_.calls().TakeAllOf(displaced->ref), CallOutcome::Kind::kDisplaced);
      RouterCommand command;
      command.mutable_displace()->set_tab_id(displaced->ref.tab_id);
      command.mutable_displace()->set_reason("another tab switched the agent on");
      state_.SendTo(displaced->ref.link_id, std::move(command));
    }
    RouterCommand accepted;
    accepted.mutable_tab_accepted()->set_tab_id(up.tab_id());
    accepted.mutable_tab_accepted()->set_agents(
        state_.sessions().AgentCount(up.account(), absl::Now()));
    outbox_->Send(std::move(accepted));
  }

  void OnTabReply(relay::v1::TabReply& reply) {
    // Only the call's own tab may answer it: the sender's link must match.
    auto [sink, tab] = state_.calls().TakeAny(reply.call_id());
    if (sink == nullptr) {
      return;  // cancelled or timed out meanwhile: the answer is dropped
    }
    if (tab.link_id != link_id_) {
      common::LogWarn("answer from the wrong gateway dropped", {{"gateway", gateway_id_}});
      sink->Complete(CallOutcome{CallOutcome::Kind::kTabGone, {}});
      return;
    }
    sink->Complete(CallOutcome{
        reply.is_error() ? CallOutcome::Kind::kError : CallOutcome::Kind::kResult,
        std::move(*reply.mutable_payload())});
  }

  void OnTabNotification(const relay::v1::TabNotification& note) {
    TabRef tab{link_id_, note.tab_id()};
    std::optional<std::string> account = state_.table().AccountOf(tab);
    if (!account) {
      return;  // displaced or gone: its news are stale
    }
    const std::string& method = note.method();
    std::string message = Notification(method, note.params());
    SessionTable& sessions = state_.sessions();
    if (method == "notifications/resources/updated") {
      state_.Deliver(sessions.ToSubscribers(*account, note.uri(), message));
      sessions.SetPendingLine(*account, note.line().empty()
                                            ? absl::StrCat("The view changed: ", note.uri())
                                            : note.line());
    } else if (IsListChanged(method)) {
      state_.Deliver(sessions.Broadcast(*account, message));
    } else if (method == "notifications/progress") {
      uint64_t call = state_.calls().FindByProgressToken(note.progress_token());
      state_.calls().With(call, &tab, [&message](CallSink& sink, const CallInfo&, const TabRef&) {
        sink.Event(message);
      });
    } else if (method == "notifications/message") {
      if (note.call_id() != 0) {
        state_.calls().With(note.call_id(), &tab,
                            [&message](CallSink& sink, const CallInfo&, const TabRef&) {
                              sink.Event(message);
                            });
      } else {
        state_.Deliver(sessions.ToLogLevel(*account, LogLevelRank(note.level()), message));
      }
    }
  }

  void OnTabRequest(relay::v1::TabRequest& request) {
    TabRef tab{link_id_, request.tab_id()};
    bool sent = state_.calls().With(request.call_id(), &tab,
                                    [&request](CallSink& sink, const CallInfo&, const TabRef&) {
                                      sink.Event(std::move(*request.mutable_message()));
                                    });
    if (!sent) {
      RouterCommand command;
      auto* response = command.mutable_tab_response();
      response->set_tab_id(request.tab_id());
      response->set_tab_request_id(request.tab_request_id());
      response->set_is_error(true);
      response->set_payload(
          R"({"code":-32602,"message":"no agent call in progress with that relay/requestId"})");
      outbox_->Send(std::move(command));
    }
  }

  void OnAgentReply(relay::v1::AgentReply& reply) {
    TabRef tab;
    bool found = state_.calls().With(
        reply.call_id(), nullptr,
        [&reply, &tab](CallSink&, const CallInfo& info, const TabRef& ref) {
          // Only the session that made the call may answer its tab's requests.
          if (info.session == reply.session_id()) {
            tab = ref;
          }
        });
    if (!found || tab.link_id == 0) {
      return;
    }
    RouterCommand command;
    auto* response = command.mutable_tab_response();
    response->set_tab_id(tab.tab_id);
    response->set_tab_request_id(reply.tab_request_id());
    response->set_is_error(reply.is_error());
    response->set_payload(std::move(*reply.mutable_payload()));
    state_.SendTo(tab.link_id, std::move(command));
  }

  void OnAgentCancel(const relay::v1::AgentCancel& cancel) {
    uint64_t call = state_.calls().FindByRequest(cancel.session_id(), cancel.request_id());
    auto [sink, tab] = state_.calls().TakeAny(call);
    if (sink == nullptr) {
      return;
    }
    RouterCommand command;
    command.mutable_cancel()->set_tab_id(tab.tab_id);
    command.mutable_cancel()->set_call_id(call);
    command.mutable_cancel()->set_reason(cancel.reason().empty() ? "the agent cancelled the request"
                                                                 : cancel.reason());
    state_.SendTo(tab.link_id, std::move(command));
    sink->Complete(CallOutcome{CallOutcome::Kind::kCancelled, {}});
  }

  // Idempotent: the link ends through a failed read, a cancel or OnDone.
  // From here no new call is delivered to it (FindLink fails).
  void End() {
    if (ended_.exchange(true)) {
      return;
    }
    outbox_->Close();
    state_.RemoveLink(link_id_);
    Finish(grpc::Status::OK);
  }

  RouterState& state_;
  grpc::CallbackServerContext* context_;
  std::shared_ptr<LinkOutbox> outbox_;
  uint64_t link_id_ = 0;
  std::string gateway_id_;
  GatewayEvent in_;
  std::atomic<bool> ended_{false};
};

// One forwarded call. Lives until OnDone. Exactly one party completes it (see
// CallRegistry), so the final write happens once; events before it queue up.
class ForwardReactor final : public grpc::ServerWriteReactor<ForwardEvent>, public CallSink {
 public:
  ForwardReactor(RouterState& state, grpc::CallbackServerContext* context,
                 const relay::v1::ForwardRequest& request)
      : state_(state), context_(context) {
    state_.metrics().forwards.Add();
    if (state_.sessions().IsEnded(request.session_id())) {
      Complete(CallOutcome{CallOutcome::Kind::kSessionEnded, {}});
      return;
    }
    std::optional<TabRef> tab = state_.table().Find(request.account());
    std::shared_ptr<LinkOutbox> link = tab ? state_.FindLink(tab->link_id) : nullptr;
    if (link == nullptr) {
      Complete(CallOutcome{CallOutcome::Kind::kNoTab, {}});
      return;
    }
    session_ = request.session_id();
    is_tool_call_ = request.method() == "tools/call";
    // Once Deliver is sent the call may complete and this reactor go away on
    // another thread: touch no member after Send.
    uint64_t call_id = state_.calls().Add(
        *tab, this,
        CallInfo{request.session_id(), request.request_id(), request.progress_token(),
                 is_tool_call_});
    call_id_ = call_id;
    // The tab may have left (TabDown, displacement, its gateway's link
    // ending) between the lookup and Add. Those paths detach the tab and then
    // take its calls; looking again after Add closes the gap: either they took
    // this call, or we see the tab gone and take it back ourselves.
    if (state_.table().AccountOf(*tab) != request.account()) {
      if (state_.calls().TakeAny(call_id).first != nullptr) {
        Complete(CallOutcome{CallOutcome::Kind::kTabGone, {}});
      }
      return;
    }
    RouterCommand command;
    auto* deliver = command.mutable_deliver();
    deliver->set_tab_id(tab->tab_id);
    deliver->set_call_id(call_id);
    deliver->set_method(request.method());
    deliver->set_params(request.params());
    link->Send(std::move(command));
  }

  // Writes are started outside mu_: once the final write is started the
  // reactor may be deleted on another thread (OnDone), mutex included.
  void Event(std::string message) override ABSL_LOCKS_EXCLUDED(mu_) {
    const ForwardEvent* start = nullptr;
    {
      absl::MutexLock lock(&mu_);
      if (finishing_) {
        return;
      }
      events_.emplace_back();
      events_.back().set_message(std::move(message));
      if (!writing_) {
        writing_ = true;
        start = &events_.front();
      }
    }
    if (start != nullptr) {
      StartWrite(start);
    }
  }

  void Complete(CallOutcome outcome) override ABSL_LOCKS_EXCLUDED(mu_) {
    RouterState::Metrics& m = state_.metrics();
    switch (outcome.kind) {
      case CallOutcome::Kind::kResult:
        m.results.Add();
        if (is_tool_call_) {
          final_.set_view_line(state_.sessions().TakePendingLine(session_));
        }
        final_.set_result(std::move(outcome.payload));
        break;
      case CallOutcome::Kind::kError:
        m.errors.Add();
        final_.set_error(std::move(outcome.payload));
        break;
      case CallOutcome::Kind::kNoTab:
        m.no_tab.Add();
        final_.mutable_failure()->set_reason(relay::v1::Failure::REASON_NO_TAB);
        break;
      case CallOutcome::Kind::kTabGone:
        m.tab_gone.Add();
        final_.mutable_failure()->set_reason(relay::v1::Failure::REASON_TAB_GONE);
        break;
      case CallOutcome::Kind::kDisplaced:
        m.displaced.Add();
        final_.mutable_failure()->set_reason(relay::v1::Failure::REASON_DISPLACED);
        break;
      case CallOutcome::Kind::kCancelled:
        m.cancelled.Add();
        final_.mutable_failure()->set_reason(relay::v1::Failure::REASON_CANCELLED);
        break;
      case CallOutcome::Kind::kSessionEnded:
        final_.mutable_failure()->set_reason(relay::v1::Failure::REASON_SESSION_ENDED);
        break;
    }
    bool start = false;
    {
      absl::MutexLock lock(&mu_);
      final_ready_ = true;
      if (!writing_) {
        writing_ = true;
        finishing_ = true;
        start = true;
      }
    }
    if (start) {
      StartWriteAndFinish(&final_, grpc::WriteOptions(), grpc::Status::OK);  // last use of this
    }
  }

  void OnWriteDone(bool ok) override ABSL_LOCKS_EXCLUDED(mu_) {
    enum class Next { kNothing, kEvent, kFinal, kCancel } next = Next::kNothing;
    const ForwardEvent* event = nullptr;
    {
      absl::MutexLock lock(&mu_);
      events_.pop_front();
      if (!events_.empty()) {
        next = Next::kEvent;
        event = &events_.front();
      } else if (final_ready_ || cancelled_) {
        next = final_ready_ ? Next::kFinal : Next::kCancel;
        finishing_ = true;
      } else {
        writing_ = false;
      }
    }
    switch (next) {
      case Next::kEvent:
        StartWrite(event);
        break;
      case Next::kFinal:
        StartWriteAndFinish(&final_, grpc::WriteOptions(), grpc::Status::OK);
        break;
      case Next::kCancel:
        Finish(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled"));
        break;
      case Next::kNothing:
        break;
    }
  }

  void OnCancel() override {
    // The agent gave up or the deadline passed: tell the tab, unless its answer
    // (or its departure) already completed the call.
    auto [sink, tab] = state_.calls().TakeAny(call_id_);
    if (sink == nullptr) {
      return;
    }
    RouterCommand command;
    auto* cancel = command.mutable_cancel();
    cancel->set_tab_id(tab.tab_id);
    cancel->set_call_id(call_id_);
    cancel->set_reason(context_->deadline() <= std::chrono::system_clock::now()
                           ? "the call's deadline passed"
                           : "the agent cancelled the request");
    state_.SendTo(tab.link_id, std::move(command));
    state_.metrics().cancelled.Add();
    bool finish_now = false;
    {
      absl::MutexLock lock(&mu_);
      if (writing_) {
        cancelled_ = true;  // finished once the write in flight is done
      } else {
        writing_ = true;
        finishing_ = true;
        finish_now = true;
      }
    }
    if (finish_now) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled"));
    }
  }

  void OnDone() override { delete this; }

 private:
  RouterState& state_;
  grpc::CallbackServerContext* context_;
  uint64_t call_id_ = 0;
  std::string session_;
  bool is_tool_call_ = false;
  absl::Mutex mu_;
  std::deque<ForwardEvent> events_ ABSL_GUARDED_BY(mu_);
  ForwardEvent final_;
  bool final_ready_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;  // the last operation is started
};

}  // namespace

RouterState::RouterState() : calls_(FirstCallId()) {}
RouterState::~RouterState() = default;

uint64_t RouterState::AddLink(std::shared_ptr<LinkOutbox> outbox) {
  absl::MutexLock lock(&mu_);
  uint64_t id = next_link_id_++;
  links_.emplace(id, std::move(outbox));
  return id;
}

void RouterState::RemoveLink(uint64_t link_id) {
  absl::MutexLock lock(&mu_);
  links_.erase(link_id);
}

std::shared_ptr<LinkOutbox> RouterState::FindLink(uint64_t link_id) const {
  absl::MutexLock lock(&mu_);
  auto it = links_.find(link_id);
  return it == links_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<LinkOutbox>> RouterState::AllLinks() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::shared_ptr<LinkOutbox>> out;
  for (const auto& [id, link] : links_) {
    out.push_back(link);
  }
  return out;
}

void RouterState::SendTo(uint64_t link_id, RouterCommand command) {
  if (auto link = FindLink(link_id)) {
    link->Send(std::move(command));
  }
}

void RouterState::NotifyAgents(const std::vector<std::string>& accounts) {
  absl::Time now = absl::Now();
  for (const std::string& account : accounts) {
    std::optional<TabRef> tab = table_.Find(account);
    if (!tab) {
      continue;
    }
    RouterCommand command;
    command.mutable_agents()->set_tab_id(tab->tab_id);
    command.mutable_agents()->set_count(sessions_.AgentCount(account, now));
    SendTo(tab->link_id, std::move(command));
  }
}

void RouterState::Deliver(const std::vector<StreamDelivery>& deliveries) {
  for (const StreamDelivery& d : deliveries) {
    RouterCommand command;
    auto* event = command.mutable_stream_event();
    event->set_stream_id(d.stream.stream_id);
    event->set_event_id(d.event_id);
    event->set_message(d.message);
    SendTo(d.stream.link_id, std::move(command));
  }
}

void RouterState::Sweep() { NotifyAgents(sessions_.Sweep(absl::Now())); }

void RouterState::EndSession(const std::string& session) {
  NotifyAgents(sessions_.End(session));
  RouterCommand ended;
  ended.mutable_session_ended()->set_session_id(session);
  for (const auto& link : AllLinks()) {
    link->Send(ended);
  }
}

bool RouterState::Kick(const std::string& account, const std::string& reason) {
  std::optional<TabRef> tab = table_.Find(account);
  if (!tab || !table_.Detach(*tab)) {
    return false;
  }
  FailCalls(calls_.TakeAllOf(*tab), CallOutcome::Kind::kDisplaced);
  RouterCommand command;
  command.mutable_displace()->set_tab_id(tab->tab_id);
  command.mutable_displace()->set_reason(reason);
  SendTo(tab->link_id, std::move(command));
  return true;
}

size_t RouterState::LinkCount() const {
  absl::MutexLock lock(&mu_);
  return links_.size();
}

std::string RouterState::RenderMetrics() const {
  common::MetricsText text;
  text.Add("relay_router_links", "Gateways linked to this router.", "gauge", LinkCount());
  text.Add("relay_router_tabs", "Tabs known to this router.", "gauge", table_.List("").size());
  text.Add("relay_router_sessions", "Agent sessions known to this router.", "gauge",
           sessions_.size());
  text.Add("relay_router_forwards_total", "Forwarded agent requests.", "counter",
           metrics_.forwards.value());
  const std::pair<const char*, const common::Counter*> outcomes[] = {
      {"result", &metrics_.results},      {"error", &metrics_.errors},
      {"no_tab", &metrics_.no_tab},       {"tab_gone", &metrics_.tab_gone},
      {"displaced", &metrics_.displaced}, {"cancelled", &metrics_.cancelled}};
  for (const auto& [name, counter] : outcomes) {
    text.Add("relay_router_forward_outcomes_total", "How forwarded requests ended.", "counter",
             counter->value(), absl::StrCat("outcome=\"", name, "\""));
  }
  return text.str();
}

grpc::ServerBidiReactor<GatewayEvent, RouterCommand>* RouterService::Link(
    grpc::CallbackServerContext* context) {
  return new LinkReactor(state_, context);
}

grpc::ServerWriteReactor<ForwardEvent>* RouterService::Forward(
    grpc::CallbackServerContext* context, const relay::v1::ForwardRequest* request) {
  return new ForwardReactor(state_, context, *request);
}

grpc::ServerUnaryReactor* RouterAdminService::ListTabs(grpc::CallbackServerContext* context,
                                                       const relay::v1::ListTabsRequest* request,
                                                       relay::v1::ListTabsResponse* response) {
  for (const TabRecord& tab : state_.table().List(request->account())) {
    auto* info = response->add_tabs();
    info->set_account(tab.account);
    info->set_role(tab.role);
    info->set_gateway_id(tab.gateway_id);
    info->set_tab_id(tab.ref.tab_id);
    info->set_client_name(tab.client_name);
    info->set_client_version(tab.client_version);
    info->set_connected_at_unix_ms(absl::ToUnixMillis(tab.connected_at));
    info->set_calls_in_flight(state_.calls().InFlight(tab.ref));
  }
  auto* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* RouterAdminService::ListSessions(
    grpc::CallbackServerContext* context, const relay::v1::ListSessionsRequest* request,
    relay::v1::ListSessionsResponse* response) {
  for (const SessionTable::Summary& s :
       state_.sessions().List(request->account(), absl::Now())) {
    auto* info = response->add_sessions();
    info->set_session_id(s.session);
    info->set_account(s.account);
    info->set_counts_as_agent(s.counts);
    info->set_has_stream(s.has_stream);
    info->set_subscriptions(static_cast<uint32_t>(s.subscriptions));
    info->set_last_seen_unix_ms(absl::ToUnixMillis(s.last_seen));
  }
  auto* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* RouterAdminService::GetStats(grpc::CallbackServerContext* context,
                                                       const relay::v1::GetStatsRequest* request,
                                                       relay::v1::GetStatsResponse* response) {
  const RouterState::Metrics& m = state_.metrics();
  response->set_links(state_.LinkCount());
  response->set_tabs(state_.table().List("").size());
  response->set_sessions(state_.sessions().size());
  response->set_forwards(m.forwards.value());
  response->set_results(m.results.value());
  response->set_errors(m.errors.value());
  response->set_no_tab(m.no_tab.value());
  response->set_tab_gone(m.tab_gone.value());
  response->set_displaced(m.displaced.value());
  response->set_cancelled(m.cancelled.value());
  auto* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* RouterAdminService::Kick(grpc::CallbackServerContext* context,
                                                   const relay::v1::KickRequest* request,
                                                   relay::v1::KickResponse* response) {
  bool kicked = state_.Kick(request->account(), "an operator disconnected this tab");
  if (kicked) {
    common::LogInfo("tab kicked by an operator");
  }
  response->set_kicked(kicked);
  auto* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* RouterAdminService::EndSession(
    grpc::CallbackServerContext* context, const relay::v1::EndSessionRequest* request,
    relay::v1::EndSessionResponse* response) {
  state_.EndSession(request->session_id());
  auto* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace relay::router
