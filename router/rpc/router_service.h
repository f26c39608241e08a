#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "relay/v1/router.grpc.pb.h"
#include "router/core/router_core.h"

namespace relay::router {

class LinkWriter;

// The router core behind one lock, and the write side of every gateway link.
// Thread-safe. Every entry point runs the core under the lock, hands the
// commands it returned to their links' writers in order (still under the lock,
// so two threads' commands for one link never swap), and starts the writes
// after releasing it.
class RouterHub {
 public:
  explicit RouterHub(RouterCoreOptions options = {});
  ~RouterHub();

  uint64_t AddLink(std::shared_ptr<LinkWriter> writer) ABSL_LOCKS_EXCLUDED(mu_);
  void RemoveLink(uint64_t link_id) ABSL_LOCKS_EXCLUDED(mu_);
  // A batch of one gateway's events.
  void Handle(uint64_t link_id, relay::v1::GatewayBatch& batch) ABSL_LOCKS_EXCLUDED(mu_);
  bool Kick(const std::string& account, const std::string& reason) ABSL_LOCKS_EXCLUDED(mu_);
  void EndSession(const std::string& session) ABSL_LOCKS_EXCLUDED(mu_);
  // Once a second: idle sessions stop counting as agents.
  void Sweep() ABSL_LOCKS_EXCLUDED(mu_);

  // Runs fn on the core under the lock (operators' views).
  template <typename Fn>
  auto Read(Fn fn) const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return fn(core_);
  }
  std::string RenderMetrics() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Runs fn(core, outbox) under the lock, queues what it returned on the
  // links' writers, and starts their writes after releasing the lock.
  template <typename Fn>
  auto Apply(Fn fn);
  // Queues out on the writers; returns them for Flush.
  std::vector<std::shared_ptr<LinkWriter>> QueueLocked(Outbox& out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static void Flush(const std::vector<std::shared_ptr<LinkWriter>>& writers);

  mutable absl::Mutex mu_;
  RouterCore core_ ABSL_GUARDED_BY(mu_);
  // How well the links batch: messages per batch, both ways.
  uint64_t batches_in_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t events_in_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t commands_out_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_link_id_ ABSL_GUARDED_BY(mu_) = 1;
  absl::flat_hash_map<uint64_t, std::shared_ptr<LinkWriter>> links_ ABSL_GUARDED_BY(mu_);
};

// The Router gRPC service: one Link reactor per gateway. Reactions run on
// gRPC's callback threads and never block: they take the hub's lock briefly
// and queue writes.
class RouterService final : public relay::v1::Router::CallbackService {
 public:
  explicit RouterService(RouterHub& hub) : hub_(hub) {}

  grpc::ServerBidiReactor<relay::v1::GatewayBatch, relay::v1::RouterBatch>* Link(
      grpc::CallbackServerContext* context) override;

 private:
  RouterHub& hub_;
};

// Operators' view.
class RouterAdminService final : public relay::v1::RouterAdmin::CallbackService {
 public:
  explicit RouterAdminService(RouterHub& hub) : hub_(hub) {}

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
  RouterHub& hub_;
};

}  // namespace relay::router
