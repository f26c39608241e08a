#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <grpcpp/alarm.h>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/grpc/cq_loop.h"
#include "common/grpc/grpc_tls.h"
#include "common/link/link_channel.h"
#include "gateway/core/shard_life.h"
#include "gateway/net/shards/router_link.h"
#include "gateway/core/router_client.h"
#include "relay/v1/router.grpc.pb.h"

namespace relay::gateway {

// One router shard as a gateway sees it: its admission (Router.OpenLink, over
// gRPC, which says where the shard's link port is), its link (RouterLink, on
// the gateway's first I/O thread), relinked whenever it ends after a wait its
// RelinkPolicy decides (jittered, 100 ms doubling to 1 s), and the calls this
// gateway's agents have in flight on it, each with its waiter. Which of these
// happens next is ShardLife's to say (one state, unit-tested); this class does
// what it says with gRPC and the link. A call's own events go to its waiter;
// every other command to the sink. When the link ends every call still
// waiting fails (the router that held it is gone or has cancelled it at its
// tab). Thread-safe: I/O threads send and forward; the link's thread reads;
// the CqLoop thread admits and relinks.
class RouterShard final : public RouterLinkOwner {
 public:
  // address: the shard's gRPC host:port; its link port is on the same host.
  RouterShard(size_t index, const std::string& address, const common::ServiceTls& tls,
              std::shared_ptr<common::LinkTls> link_tls, std::string gateway_id,
              RouterCommandSink& sink, std::atomic<uint64_t>& next_ref, common::CqLoop& loop,
              boost::asio::io_context& io);

  // Asks for admission, then links (and again whenever the link ends).
  void Start() ABSL_LOCKS_EXCLUDED(mu_);

  bool Send(const relay::v1::GatewayEvent& event) ABSL_LOCKS_EXCLUDED(mu_);

  uint64_t Forward(ForwardRequest request, std::shared_ptr<CallWaiter> waiter)
      ABSL_LOCKS_EXCLUDED(calls_mu_);

  bool Cancel(uint64_t ref, RouterClient::CancelReason reason);

  bool Park(uint64_t ref, uint32_t round, absl::Duration ttl);

  size_t CallsInFlight() ABSL_LOCKS_EXCLUDED(calls_mu_);

  void CancelAll(RouterClient::CancelReason reason) ABSL_LOCKS_EXCLUDED(calls_mu_);

  // A batch from this shard, split in two: a call's own events go to its waiter
  // (this shard's table of calls), the rest to RouterCommands, which tells the
  // sessions' commands apart.
  void OnBatch(relay::v1::RouterBatch& batch) override;

  void OnCallEvent(relay::v1::CallEvent& event) ABSL_LOCKS_EXCLUDED(calls_mu_);

  void OnCallDone(relay::v1::CallDone& done);

  void OnLinkEnded(RouterLink* link, const absl::Status& status) override
      ABSL_LOCKS_EXCLUDED(mu_, calls_mu_);

  void OnLinkEstablished() override ABSL_LOCKS_EXCLUDED(mu_);

  bool up() const { return up_.load(); }

  bool Flushed() ABSL_LOCKS_EXCLUDED(mu_);

  // Stops relinking, ends the link and waits until it has ended, so that no
  // reaction runs after the client is gone (the I/O threads and the CqLoop
  // must still run).
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  static void BuildStart(ForwardRequest& request, uint64_t ref, relay::v1::CallStart* start);

  std::shared_ptr<CallWaiter> Take(uint64_t ref) ABSL_LOCKS_EXCLUDED(calls_mu_);

  // OpenLink's answer, on the CqLoop thread: the link starts, or the shard
  // tries again later.
  void OnAdmitted(const grpc::Status& status, uint32_t port) ABSL_LOCKS_EXCLUDED(mu_);
  // Sends OpenLink (ShardLife said to).
  void AdmitLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Says why the shard is not linked, once per reason (a router that is down
  // is tried every second).
  void LogDown(const absl::Status& status) ABSL_LOCKS_EXCLUDED(mu_);

  void ScheduleRelinkLocked(absl::Duration wait) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // The relink alarm's tag: fired (link again) or cancelled by Stop.
  void OnRelinkAlarm(bool fired) ABSL_LOCKS_EXCLUDED(mu_);

  class Admission;

  const size_t index_;
  const std::string address_;
  std::string host_;  // of address_: the link's too
  const std::shared_ptr<common::LinkTls> link_tls_;
  const std::string gateway_id_;
  RouterCommandSink& sink_;
  std::atomic<uint64_t>& next_ref_;
  common::CqLoop& loop_;
  boost::asio::io_context& io_;
  std::unique_ptr<relay::v1::Router::Stub> stub_;
  common::CallbackTag relink_{[this](bool fired) { OnRelinkAlarm(fired); }};
  absl::Mutex mu_;
  ShardLife life_ ABSL_GUARDED_BY(mu_){RelinkPolicy(RelinkPolicy::RandomJitter())};
  std::atomic<bool> up_{false};  // life_.up(), read without the lock by Forward
  std::shared_ptr<RouterLink> link_ ABSL_GUARDED_BY(mu_);  // from Admitted to LinkEnded
  std::unique_ptr<grpc::Alarm> alarm_ ABSL_GUARDED_BY(mu_);
  std::string last_down_ ABSL_GUARDED_BY(mu_);  // the reason logged last
  absl::Mutex calls_mu_;
  absl::flat_hash_map<uint64_t, std::shared_ptr<CallWaiter>> calls_ ABSL_GUARDED_BY(calls_mu_);
};

}  // namespace relay::gateway
