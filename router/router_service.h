#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "common/metrics.h"
#include "relay/v1/router.grpc.pb.h"
#include "router/call_registry.h"
#include "router/routing_table.h"
#include "router/session_table.h"

namespace relay::router {

class LinkOutbox;

// Everything the router knows; all of it soft state, rebuilt from the gateways.
// Thread-safe: each part has its own lock, held only for map operations.
class RouterState {
 public:
  RouterState();
  ~RouterState();

  RoutingTable& table() { return table_; }
  CallRegistry& calls() { return calls_; }
  SessionTable& sessions() { return sessions_; }

  uint64_t AddLink(std::shared_ptr<LinkOutbox> outbox) ABSL_LOCKS_EXCLUDED(mu_);
  void RemoveLink(uint64_t link_id) ABSL_LOCKS_EXCLUDED(mu_);
  // Null when the link has ended.
  std::shared_ptr<LinkOutbox> FindLink(uint64_t link_id) const ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<std::shared_ptr<LinkOutbox>> AllLinks() const ABSL_LOCKS_EXCLUDED(mu_);

  // Sends a command to a gateway, if its link is still there.
  void SendTo(uint64_t link_id, relay::v1::RouterCommand command);
  // Tells each account's tab its new agent count.
  void NotifyAgents(const std::vector<std::string>& accounts);
  void Deliver(const std::vector<StreamDelivery>& deliveries);
  // Once a second: idle sessions stop counting as agents.
  void Sweep();
  // Ends a session (DELETE or an operator) and tells every gateway.
  void EndSession(const std::string& session);
  // Displaces the account's tab; false when it has none here.
  bool Kick(const std::string& account, const std::string& reason);
  size_t LinkCount() const ABSL_LOCKS_EXCLUDED(mu_);

  struct Metrics {
    common::Counter forwards;
    common::Counter results;
    common::Counter errors;
    common::Counter no_tab;
    common::Counter tab_gone;
    common::Counter displaced;
    common::Counter cancelled;
  };
  Metrics& metrics() { return metrics_; }
  // Prometheus text of the counters and the tables' sizes.
  std::string RenderMetrics() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  RoutingTable table_;
  CallRegistry calls_;
  SessionTable sessions_;
  Metrics metrics_;
  mutable absl::Mutex mu_;
  uint64_t next_link_id_ ABSL_GUARDED_BY(mu_) = 1;
  absl::flat_hash_map<uint64_t, std::shared_ptr<LinkOutbox>> links_ ABSL_GUARDED_BY(mu_);
};

// The Router gRPC service: one Link reactor per gateway, one Forward reactor
// per forwarded call. Reactions run on gRPC's callback threads and never block:
// they take short locks on RouterState and queue writes.
class RouterService final : public relay::v1::Router::CallbackService {
 public:
  explicit RouterService(RouterState& state) : state_(state) {}

  grpc::ServerBidiReactor<relay::v1::GatewayEvent, relay::v1::RouterCommand>* Link(
      grpc::CallbackServerContext* context) override;
  grpc::ServerWriteReactor<relay::v1::ForwardEvent>* Forward(
      grpc::CallbackServerContext* context, const relay::v1::ForwardRequest* request) override;

 private:
  RouterState& state_;
};

// Operators' view.
class RouterAdminService final : public relay::v1::RouterAdmin::CallbackService {
 public:
  explicit RouterAdminService(RouterState& state) : state_(state) {}

  grpc::ServerUnaryReactor* ListTabs(grpc::CallbackServerContext* context,
                                     const relay::v1::ListTabsRequest* request,
                                     relay::v1::ListTabsResponse* response) override;
  grpc::ServerUnaryReactor* ListSessions(grpc::CallbackServerContext* context,
                                         const relay::v1::ListSessionsRequest* request,
                                         relay::v1::ListSessionsResponse* response) override;
  grpc::ServerUnaryReactor* GetStats(grpc::CallbackServerContext* context,
                                     const relay::v1::GetStatsRequest* request,
                                     relay::v1::GetStatsResponse* response) override;
  grpc::ServerUnaryReactor* Kick(grpc::CallbackServerContext* context,
                                 const relay::v1::KickRequest* request,
                                 relay::v1::KickResponse* response) override;
  grpc::ServerUnaryReactor* EndSession(grpc::CallbackServerContext* context,
                                       const relay::v1::EndSessionRequest* request,
                                       relay::v1::EndSessionResponse* response) override;

 private:
  RouterState& state_;
};

}  // namespace relay::router
