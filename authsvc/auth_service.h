#pragma once

#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "authsvc/host_api_client.h"
#include "authsvc/tab_order.h"
#include "authsvc/verify_cache.h"
#include "common/metrics.h"
#include "relay/v1/auth.grpc.pb.h"

namespace relay::authsvc {

// The Auth gRPC service. Runs on gRPC's callback threads; every reaction only
// starts an upstream request and returns, the answer finishes the RPC from the
// host API client's thread.
class AuthService final : public relay::v1::Auth::CallbackService {
 public:
  AuthService(HostApi& host_api, VerifyCache& cache) : host_api_(host_api), cache_(cache) {}

  grpc::ServerUnaryReactor* VerifyToken(grpc::CallbackServerContext* context,
                                        const relay::v1::VerifyTokenRequest* request,
                                        relay::v1::VerifyTokenResponse* response) override;
  grpc::ServerUnaryReactor* RedeemTicket(grpc::CallbackServerContext* context,
                                         const relay::v1::RedeemTicketRequest* request,
                                         relay::v1::RedeemTicketResponse* response) override;
  // Prometheus text of the service's counters.
  std::string RenderMetrics() const;
  // Drops the cached verdicts of a user or a token (by SHA-256, lowercase hex)
  // and pushes the revocation to every gateway watching; returns how many
  // cache entries went. Forget (operators) and the host API's HTTP hook call it.
  size_t ForgetNow(const relay::v1::ForgetRequest& what) ABSL_LOCKS_EXCLUDED(watchers_mu_);

  grpc::ServerUnaryReactor* Forget(grpc::CallbackServerContext* context,
                                   const relay::v1::ForgetRequest* request,
                                   relay::v1::ForgetResponse* response) override;

  // Sends an empty Revocation, a beat, to every gateway watching whose stream
  // has nothing waiting: a gateway takes a stream silent for a second for one
  // that is down (authsvc's machine gone without a word). Call every 250 ms.
  void Beat() ABSL_LOCKS_EXCLUDED(watchers_mu_);

  // Gateways hold this open; every Forget is pushed to all of them at once.
  grpc::ServerWriteReactor<relay::v1::Revocation>* WatchRevocations(
      grpc::CallbackServerContext* context,
      const relay::v1::WatchRevocationsRequest* request) override;

  grpc::ServerUnaryReactor* GetStats(grpc::CallbackServerContext* context,
                                     const relay::v1::GetAuthStatsRequest* request,
                                     relay::v1::AuthStats* response) override;

  class Watcher;

 private:
  // Sends one request to the host API, timed; done hears the interpreted answer.
  void Ask(const std::string& route, const std::string& body,
           std::function<void(absl::StatusOr<HostAnswer>)> done);
  void Publish(const relay::v1::Revocation& revocation) ABSL_LOCKS_EXCLUDED(watchers_mu_);
  friend class Watcher;
  void RemoveWatcher(Watcher* watcher) ABSL_LOCKS_EXCLUDED(watchers_mu_);

  mutable absl::Mutex watchers_mu_;
  absl::flat_hash_set<Watcher*> watchers_ ABSL_GUARDED_BY(watchers_mu_);
  HostApi& host_api_;
  VerifyCache& cache_;
  TabOrder tab_order_;  // redeemed tickets' generations
  common::Counter verify_requests_;
  common::Counter redeem_requests_;
  common::Counter upstream_requests_;
  common::Counter upstream_unreachable_;  // no HTTP answer in time
  common::Counter upstream_bad_answers_;  // an answer the contract does not allow
  common::Counter upstream_refused_;      // --max_pending_upstream requests waited
  common::Histogram upstream_seconds_;
};

}  // namespace relay::authsvc
