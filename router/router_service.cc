#include "router/router_service.h"

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
    StartRead(&in_);
  }

  void OnWriteDone(bool ok) override { outbox_->OnWritten(ok); }

  void OnCancel() override { End(); }

  void OnDone() override {
    End();
    delete this;
  }

 private:
  void Handle(const GatewayEvent& event) {
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
      case GatewayEvent::kTabReply: {
        const auto& reply = event.tab_reply();
        // Only the call's own tab may answer it: the sender's link must match.
        CallSink* sink = nullptr;
        TabRef expected;
        {
          auto [taken, tab] = state_.calls().TakeAny(reply.call_id());
          sink = taken;
          expected = tab;
        }
        if (sink == nullptr) {
          break;  // cancelled or timed out meanwhile: the answer is dropped
        }
        if (expected.link_id != link_id_) {
          common::LogWarn("answer from the wrong gateway dropped", {{"gateway", gateway_id_}});
          sink->Complete(CallOutcome{CallOutcome::Kind::kTabGone, {}});
          break;
        }
        sink->Complete(CallOutcome{
            reply.is_error() ? CallOutcome::Kind::kError : CallOutcome::Kind::kResult,
            reply.payload()});
        break;
      }
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
    if (displaced) {
      FailCalls(state_.calls().TakeAllOf(displaced->ref), CallOutcome::Kind::kDisplaced);
      if (auto link = state_.FindLink(displaced->ref.link_id)) {
        RouterCommand command;
        command.mutable_displace()->set_tab_id(displaced->ref.tab_id);
        command.mutable_displace()->set_reason("another tab switched the agent on");
        link->Send(std::move(command));
      }
    }
    RouterCommand accepted;
    accepted.mutable_tab_accepted()->set_tab_id(up.tab_id());
    outbox_->Send(std::move(accepted));
  }

  // Idempotent: the link ends through a failed read, a cancel or OnDone.
  void End() {
    if (ended_.exchange(true)) {
      return;
    }
    outbox_->Close();
    state_.RemoveLink(link_id_);
    for (const TabRecord& tab : state_.table().DetachLink(link_id_)) {
      FailCalls(state_.calls().TakeAllOf(tab.ref), CallOutcome::Kind::kTabGone);
    }
    common::LogInfo("gateway unlinked", {{"gateway", gateway_id_}});
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

// One forwarded call. Lives until OnDone; exactly one party completes it (see
// CallRegistry), so Finish is called exactly once.
class ForwardReactor final : public grpc::ServerWriteReactor<ForwardEvent>, public CallSink {
 public:
  ForwardReactor(RouterState& state, grpc::CallbackServerContext* context,
                 const relay::v1::ForwardRequest& request)
      : state_(state), context_(context) {
    state_.metrics().forwards.Add();
    std::optional<TabRef> tab = state_.table().Find(request.account());
    std::shared_ptr<LinkOutbox> link = tab ? state_.FindLink(tab->link_id) : nullptr;
    if (link == nullptr) {
      Complete(CallOutcome{CallOutcome::Kind::kNoTab, {}});
      return;
    }
    // Once Deliver is sent the call may complete and this reactor go away on
    // another thread: touch no member after Send.
    uint64_t call_id = state_.calls().Add(*tab, this);
    call_id_ = call_id;
    RouterCommand command;
    auto* deliver = command.mutable_deliver();
    deliver->set_tab_id(tab->tab_id);
    deliver->set_call_id(call_id);
    deliver->set_method(request.method());
    deliver->set_params(request.params());
    link->Send(std::move(command));
  }

  void Complete(CallOutcome outcome) override {
    RouterState::Metrics& m = state_.metrics();
    switch (outcome.kind) {
      case CallOutcome::Kind::kResult:
        m.results.Add();
        out_.set_result(std::move(outcome.payload));
        break;
      case CallOutcome::Kind::kError:
        m.errors.Add();
        out_.set_error(std::move(outcome.payload));
        break;
      case CallOutcome::Kind::kNoTab:
        m.no_tab.Add();
        out_.mutable_failure()->set_reason(relay::v1::Failure::REASON_NO_TAB);
        break;
      case CallOutcome::Kind::kTabGone:
        m.tab_gone.Add();
        out_.mutable_failure()->set_reason(relay::v1::Failure::REASON_TAB_GONE);
        break;
      case CallOutcome::Kind::kDisplaced:
        m.displaced.Add();
        out_.mutable_failure()->set_reason(relay::v1::Failure::REASON_DISPLACED);
        break;
    }
    StartWriteAndFinish(&out_, grpc::WriteOptions(), grpc::Status::OK);
  }

  void OnCancel() override {
    // The agent gave up or the deadline passed: tell the tab, unless its answer
    // (or its departure) already completed the call.
    auto [sink, tab] = state_.calls().TakeAny(call_id_);
    if (sink == nullptr) {
      return;
    }
    if (auto link = state_.FindLink(tab.link_id)) {
      RouterCommand command;
      auto* cancel = command.mutable_cancel();
      cancel->set_tab_id(tab.tab_id);
      cancel->set_call_id(call_id_);
      cancel->set_reason(context_->deadline() <= std::chrono::system_clock::now()
                             ? "the call's deadline passed"
                             : "the agent cancelled the request");
      link->Send(std::move(command));
    }
    state_.metrics().cancelled.Add();
    Finish(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled"));
  }

  void OnDone() override { delete this; }

 private:
  RouterState& state_;
  grpc::CallbackServerContext* context_;
  uint64_t call_id_ = 0;
  ForwardEvent out_;
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

std::string RouterState::RenderMetrics() const {
  common::MetricsText text;
  size_t links = 0;
  {
    absl::MutexLock lock(&mu_);
    links = links_.size();
  }
  text.Add("relay_router_links", "Gateways linked to this router.", "gauge", links);
  text.Add("relay_router_tabs", "Tabs known to this router.", "gauge",
           table_.List("").size());
  text.Add("relay_router_forwards_total", "Forwarded agent requests.", "counter",
           metrics_.forwards.value());
  const std::pair<const char*, const common::Counter*> outcomes[] = {
      {"result", &metrics_.results},     {"error", &metrics_.errors},
      {"no_tab", &metrics_.no_tab},      {"tab_gone", &metrics_.tab_gone},
      {"displaced", &metrics_.displaced}, {"cancelled", &metrics_.cancelled}};
  for (const auto& [name, counter] : outcomes) {
    text.Add("relay_router_forward_outcomes_total", "How forwarded requests ended.", "counter",
             counter->value(), absl::StrCat("outcome=\"", name, "\""));
  }
  return text.str();
}

std::shared_ptr<LinkOutbox> RouterState::FindLink(uint64_t link_id) const {
  absl::MutexLock lock(&mu_);
  auto it = links_.find(link_id);
  return it == links_.end() ? nullptr : it->second;
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

}  // namespace relay::router
