#include "router/rpc/router_service.h"

#include <algorithm>
#include <atomic>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/batch_queue.h"
#include "common/log.h"
#include "common/metrics.h"

namespace relay::router {

using relay::v1::GatewayBatch;
using relay::v1::RouterBatch;
using relay::v1::RouterCommand;

namespace {

uint64_t FirstCallId() {
  // Ids of a restarted router start above anything the previous run handed
  // out (unless it sustained a million calls a second), and stay below 2^53 so
  // that a tab in JavaScript reads them exactly.
  return static_cast<uint64_t>(absl::ToUnixMillis(absl::Now())) * 1000;
}

// A batch is cut here so that one large answer does not hold up the rest.
constexpr size_t kBatchBytes = 1 << 20;
// A gateway that stops reading its link: its commands wait up to this much,
// then the link ends (the gateway reconnects and re-announces).
constexpr size_t kMaxQueuedBytes = 256 << 20;

}  // namespace

// The write side of one gateway link, shared by every thread whose commands
// are for this gateway. One write in flight; what becomes ready meanwhile goes
// out as the next batch. Outlives its reactor: after Close, commands are dropped.
class LinkWriter {
 public:
  explicit LinkWriter(grpc::ServerBidiReactor<GatewayBatch, RouterBatch>* reactor,
                      grpc::CallbackServerContext* context)
      : reactor_(reactor), context_(context) {}

  void Push(RouterCommand&& command) ABSL_LOCKS_EXCLUDED(mu_) {
    size_t bytes = command.ByteSizeLong();
    absl::MutexLock lock(&mu_);
    if (reactor_ == nullptr) {
      return;
    }
    if (!queue_.Push(std::move(command), bytes)) {
      common::LogWarn("gateway not reading its link; ending it");
      context_->TryCancel();
      reactor_ = nullptr;
    }
  }

  // Starts a write if none is in flight. StartWrite is called under mu_ so
  // that Close (which precedes Finish, and so the reactor's deletion) cannot
  // run between the check and the call.
  void Flush() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    StartLocked();
  }

  void OnWritten(bool ok) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    queue_.Written();
    if (!ok) {
      reactor_ = nullptr;
      return;
    }
    StartLocked();
  }

  void Close() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    reactor_ = nullptr;
  }

 private:
  void StartLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (reactor_ == nullptr) {
      return;
    }
    if (RouterBatch* batch = queue_.Next()) {
      reactor_->StartWrite(batch);
    }
  }

  absl::Mutex mu_;
  grpc::ServerBidiReactor<GatewayBatch, RouterBatch>* reactor_ ABSL_GUARDED_BY(mu_);
  grpc::CallbackServerContext* const context_;
  common::BatchQueue<RouterBatch, RouterCommand, &RouterBatch::add_commands> queue_
      ABSL_GUARDED_BY(mu_){kBatchBytes, kMaxQueuedBytes};
};

namespace {

// One gateway's link. Reads a batch, hands it to the hub, reads the next.
// Lives until OnDone.
class GatewayLinkReactor final : public grpc::ServerBidiReactor<GatewayBatch, RouterBatch> {
 public:
  GatewayLinkReactor(RouterHub& hub, grpc::CallbackServerContext* context)
      : hub_(hub), context_(context), writer_(std::make_shared<LinkWriter>(this, context)) {
    link_id_ = hub_.AddLink(writer_);
    common::LogInfo("gateway linked", {{"link", link_id_}, {"peer", context_->peer()}});
    // Tells the gateway at once that the link is up (its readiness).
    StartSendInitialMetadata();
    StartRead(&in_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      End();
      return;
    }
    hub_.Handle(link_id_, in_);
    in_.Clear();
    if (!ended_.load()) {
      StartRead(&in_);
    }
  }

  void OnWriteDone(bool ok) override { writer_->OnWritten(ok); }

  // The pending read fails next and ends the link (OnReadDone): finishing
  // here could race a StartRead of a reaction that is running.
  void OnCancel() override { writer_->Close(); }

  // Reactions may run concurrently (a cancel while a batch is handled), so
  // the link's state is torn down here, after every other reaction: nothing
  // that a late batch added can outlive the link.
  void OnDone() override {
    End();
    hub_.RemoveLink(link_id_);
    common::LogInfo("gateway unlinked", {{"link", link_id_}});
    delete this;
  }

 private:
  // Idempotent: the link ends through a failed read, a cancel or OnDone.
  void End() {
    if (ended_.exchange(true)) {
      return;
    }
    writer_->Close();
    Finish(grpc::Status::OK);
  }

  RouterHub& hub_;
  grpc::CallbackServerContext* context_;
  std::shared_ptr<LinkWriter> writer_;
  uint64_t link_id_ = 0;
  GatewayBatch in_;
  std::atomic<bool> ended_{false};
};

}  // namespace

RouterHub::RouterHub(RouterCoreOptions options) : core_(FirstCallId(), options) {}
RouterHub::~RouterHub() = default;

uint64_t RouterHub::AddLink(std::shared_ptr<LinkWriter> writer) {
  absl::MutexLock lock(&mu_);
  uint64_t id = next_link_id_++;
  links_.emplace(id, std::move(writer));
  core_.LinkUp(id);
  return id;
}

template <typename Fn>
auto RouterHub::Apply(Fn fn) {
  std::vector<std::shared_ptr<LinkWriter>> touched;
  decltype(fn(core_, std::declval<Outbox&>())) result;
  {
    absl::MutexLock lock(&mu_);
    Outbox out;
    result = fn(core_, out);
    touched = QueueLocked(out);
  }
  Flush(touched);
  return result;
}

void RouterHub::RemoveLink(uint64_t link_id) {
  Apply([&](RouterCore& core, Outbox& out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    links_.erase(link_id);
    core.LinkDown(link_id, absl::Now(), out);
    return true;
  });
}

void RouterHub::Handle(uint64_t link_id, GatewayBatch& batch) {
  Apply([&](RouterCore& core, Outbox& out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!links_.contains(link_id)) {
      return false;  // the link ended while this batch was read
    }
    absl::Time now = absl::Now();
    ++batches_in_;
    events_in_ += batch.events_size();
    for (relay::v1::GatewayEvent& event : *batch.mutable_events()) {
      core.Handle(link_id, event, now, out);
    }
    return true;
  });
}

bool RouterHub::Kick(const std::string& account, const std::string& reason) {
  return Apply([&](RouterCore& core, Outbox& out) { return core.Kick(account, reason, out); });
}

void RouterHub::EndSession(const std::string& session) {
  Apply([&](RouterCore& core, Outbox& out) {
    core.EndSession(session, out);
    return true;
  });
}

void RouterHub::Sweep() {
  Apply([&](RouterCore& core, Outbox& out) {
    core.Sweep(absl::Now(), out);
    return true;
  });
}

std::vector<std::shared_ptr<LinkWriter>> RouterHub::QueueLocked(Outbox& out) {
  std::vector<std::shared_ptr<LinkWriter>> touched;
  commands_out_ += out.size();
  for (Outgoing& o : out) {
    auto it = links_.find(o.link_id);
    if (it == links_.end()) {
      continue;  // that gateway's link has ended
    }
    it->second->Push(std::move(o.command));
    // Usually one or two links: a linear look is the cheapest set.
    if (std::find(touched.begin(), touched.end(), it->second) == touched.end()) {
      touched.push_back(it->second);
    }
  }
  return touched;
}

void RouterHub::Flush(const std::vector<std::shared_ptr<LinkWriter>>& writers) {
  for (const auto& writer : writers) {
    writer->Flush();
  }
}

std::string RouterHub::RenderMetrics() const {
  absl::MutexLock lock(&mu_);
  const RouterCounts& c = core_.counts();
  common::MetricsText text;
  text.Add("relay_router_links", "Gateways linked to this router.", "gauge", core_.LinkCount());
  text.Add("relay_router_tabs", "Tabs known to this router.", "gauge",
           core_.tabs().List("").size());
  text.Add("relay_router_sessions", "Agent sessions known to this router.", "gauge",
           core_.sessions().size());
  text.Add("relay_router_calls_in_flight", "Forwarded calls waiting for their tab.", "gauge",
           core_.CallsInFlight());
  text.Add("relay_router_forwards_total", "Forwarded agent requests.", "counter", c.forwards);
  text.Add("relay_router_link_batches_received_total", "Batches read from gateway links.",
           "counter", batches_in_);
  text.Add("relay_router_link_events_received_total", "Events read from gateway links.", "counter",
           events_in_);
  text.Add("relay_router_link_commands_sent_total", "Commands queued for gateway links.",
           "counter", commands_out_);
  const std::pair<const char*, uint64_t> outcomes[] = {
      {"result", c.results},       {"error", c.errors},         {"no_tab", c.no_tab},
      {"tab_gone", c.tab_gone},    {"displaced", c.displaced},  {"cancelled", c.cancelled},
      {"too_many", c.too_many}};
  for (const auto& [name, value] : outcomes) {
    text.Add("relay_router_forward_outcomes_total", "How forwarded requests ended.", "counter",
             value, absl::StrCat("outcome=\"", name, "\""));
  }
  return text.str();
}

grpc::ServerBidiReactor<GatewayBatch, RouterBatch>* RouterService::Link(
    grpc::CallbackServerContext* context) {
  return new GatewayLinkReactor(hub_, context);
}

grpc::ServerUnaryReactor* RouterAdminService::ListTabs(grpc::CallbackServerContext* context,
                                                       const relay::v1::ListTabsRequest* request,
                                                       relay::v1::ListTabsResponse* response) {
  hub_.Read([&](const RouterCore& core) {
    for (const TabRecord& tab : core.tabs().List(request->account())) {
      auto* info = response->add_tabs();
      info->set_account(tab.account);
      info->set_role(tab.role);
      info->set_gateway_id(tab.gateway_id);
      info->set_tab_id(tab.ref.tab_id);
      info->set_client_name(tab.client_name);
      info->set_client_version(tab.client_version);
      info->set_connected_at_unix_ms(absl::ToUnixMillis(tab.connected_at));
      info->set_calls_in_flight(core.CallsInFlight(tab.ref));
    }
    return 0;
  });
  auto* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* RouterAdminService::ListSessions(
    grpc::CallbackServerContext* context, const relay::v1::ListSessionsRequest* request,
    relay::v1::ListSessionsResponse* response) {
  auto sessions = hub_.Read([&](const RouterCore& core) {
    return core.sessions().List(request->account(), absl::Now());
  });
  for (const SessionTable::Summary& s : sessions) {
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
  hub_.Read([&](const RouterCore& core) {
    const RouterCounts& c = core.counts();
    response->set_links(core.LinkCount());
    response->set_tabs(core.tabs().List("").size());
    response->set_sessions(core.sessions().size());
    response->set_forwards(c.forwards);
    response->set_results(c.results);
    response->set_errors(c.errors);
    response->set_no_tab(c.no_tab);
    response->set_tab_gone(c.tab_gone);
    response->set_displaced(c.displaced);
    response->set_cancelled(c.cancelled);
    return 0;
  });
  auto* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* RouterAdminService::Kick(grpc::CallbackServerContext* context,
                                                   const relay::v1::KickRequest* request,
                                                   relay::v1::KickResponse* response) {
  bool kicked = hub_.Kick(request->account(), "an operator disconnected this tab");
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
  hub_.EndSession(request->session_id());
  auto* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace relay::router
