#include <atomic>
#include <random>

#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/cq_loop.h"
#include "common/log.h"
#include "gateway/rpc/channel.h"
#include "gateway/rpc/grpc_clients.h"
#include "gateway/rpc/router_link.h"
#include "gateway/core/shard_picker.h"
#include "relay/v1/router.grpc.pb.h"

namespace relay::gateway {
namespace {

using relay::v1::GatewayBatch;
using relay::v1::GatewayEvent;
using relay::v1::RouterBatch;
using relay::v1::RouterCommand;


ForwardOutcome ToOutcome(relay::v1::CallDone& done) {
  ForwardOutcome outcome;
  switch (done.outcome_case()) {
    case relay::v1::CallDone::kResult:
      outcome.kind = ForwardOutcome::Kind::kResult;
      outcome.payload = std::move(*done.mutable_result());
      outcome.view_line = std::move(*done.mutable_view_line());
      return outcome;
    case relay::v1::CallDone::kError:
      outcome.kind = ForwardOutcome::Kind::kError;
      outcome.payload = std::move(*done.mutable_error());
      return outcome;
    case relay::v1::CallDone::kFailure:
    case relay::v1::CallDone::OUTCOME_NOT_SET:
      break;
  }
  switch (done.failure().reason()) {
    case relay::v1::Failure::REASON_NO_TAB:
      outcome.kind = ForwardOutcome::Kind::kNoTab;
      break;
    case relay::v1::Failure::REASON_DISPLACED:
      outcome.kind = ForwardOutcome::Kind::kDisplaced;
      break;
    case relay::v1::Failure::REASON_CANCELLED:
      outcome.kind = ForwardOutcome::Kind::kCancelled;
      break;
    case relay::v1::Failure::REASON_SESSION_ENDED:
      outcome.kind = ForwardOutcome::Kind::kSessionEnded;
      break;
    case relay::v1::Failure::REASON_TOO_MANY_CALLS:
      outcome.kind = ForwardOutcome::Kind::kTooManyCalls;
      break;
    default:
      outcome.kind = ForwardOutcome::Kind::kTabGone;
      break;
  }
  return outcome;
}

class Shard final : public RouterLinkOwner {
 public:
  Shard(size_t index, const std::string& address, const common::GrpcTls& tls, std::string gateway_id,
        RouterCommandSink& sink, std::atomic<uint64_t>& next_ref, common::CqLoop& loop,
        const Deferrer& defer)
      : index_(index), address_(address), gateway_id_(std::move(gateway_id)), sink_(sink),
        next_ref_(next_ref), loop_(loop), defer_(defer),
        stub_(relay::v1::Router::NewStub(MakeChannel(address, tls))) {}

  // Starts a link (at start, and from the relink alarm).
  void Link() ABSL_LOCKS_EXCLUDED(mu_) {
    RouterLink* link;
    {
      absl::MutexLock lock(&mu_);
      alarm_pending_ = false;
      if (stopping_) {
        return;
      }
      // Published, with its hello first in its queue, before the stream
      // starts: nothing it does can run before link_ names it.
      link = new RouterLink(*this, *stub_, loop_, defer_);
      link_ = link;
      GatewayEvent hello;
      hello.mutable_hello()->set_gateway_id(gateway_id_);
      link->Send(std::move(hello));
    }
    link->Start();
    // Announces this gateway's tabs of this shard; they queue behind the hello.
    sink_.OnLinkUp(index_);
  }

  bool Send(GatewayEvent&& event) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return link_ != nullptr && link_->Send(std::move(event));
  }

  uint64_t Forward(ForwardRequest request, std::shared_ptr<CallWaiter> waiter)
      ABSL_LOCKS_EXCLUDED(calls_mu_) {
    if (!up_.load()) {
      // An agent must hear at once that its shard is down.
      waiter->OnCallDone(ForwardOutcome{ForwardOutcome::Kind::kRouterUnavailable, {}, {}});
      return 0;
    }
    uint64_t ref = next_ref_.fetch_add(1);
    {
      absl::MutexLock lock(&calls_mu_);
      calls_.emplace(ref, std::move(waiter));
    }
    GatewayEvent event;
    auto* start = event.mutable_call_start();
    start->set_call_ref(ref);
    start->set_account(std::move(request.account));
    start->set_session_id(std::move(request.session_id));
    start->set_method(std::move(request.method));
    start->set_params(std::move(request.params));
    start->set_request_id(std::move(request.request_id));
    start->set_progress_token(std::move(request.progress_token));
    if (!Send(std::move(event))) {
      // The link ended just now; if its end has not failed this call yet, we do.
      if (auto taken = Take(ref)) {
        taken->OnCallDone(ForwardOutcome{ForwardOutcome::Kind::kRouterUnavailable, {}, {}});
      }
    }
    return ref;
  }

  void Cancel(uint64_t ref, RouterClient::CancelReason reason) {
    std::shared_ptr<CallWaiter> waiter = Take(ref);
    if (waiter == nullptr) {
      return;  // it ended meanwhile
    }
    GatewayEvent event;
    event.mutable_call_cancel()->set_call_ref(ref);
    ForwardOutcome::Kind kind = ForwardOutcome::Kind::kCancelled;
    switch (reason) {
      case RouterClient::CancelReason::kDeadline:
        event.mutable_call_cancel()->set_reason("the call's deadline passed");
        kind = ForwardOutcome::Kind::kTimeout;
        break;
      case RouterClient::CancelReason::kShutdown:
        event.mutable_call_cancel()->set_reason("the agent's gateway is shutting down");
        kind = ForwardOutcome::Kind::kShuttingDown;
        break;
      case RouterClient::CancelReason::kAgentGone:
        event.mutable_call_cancel()->set_reason("the agent cancelled the request");
        break;
    }
    Send(std::move(event));
    waiter->OnCallDone(ForwardOutcome{kind, {}, {}});
  }

  size_t CallsInFlight() ABSL_LOCKS_EXCLUDED(calls_mu_) {
    absl::MutexLock lock(&calls_mu_);
    return calls_.size();
  }

  void CancelAll(RouterClient::CancelReason reason) ABSL_LOCKS_EXCLUDED(calls_mu_) {
    std::vector<uint64_t> refs;
    {
      absl::MutexLock lock(&calls_mu_);
      for (const auto& [ref, waiter] : calls_) {
        refs.push_back(ref);
      }
    }
    for (uint64_t ref : refs) {
      Cancel(ref, reason);
    }
  }

  // The one place where the router's commands are told apart: a call's own
  // events go to its waiter, the rest to the gateway's sessions.
  void OnBatch(RouterBatch& batch) override {
    for (RouterCommand& command : *batch.mutable_commands()) {
      switch (command.command_case()) {
        case RouterCommand::kCallEvent:
          OnCallEvent(*command.mutable_call_event());
          break;
        case RouterCommand::kCallDone:
          OnCallDone(*command.mutable_call_done());
          break;
        default:
          sink_.OnCommand(command);
          break;
      }
    }
  }

  void OnCallEvent(relay::v1::CallEvent& event) ABSL_LOCKS_EXCLUDED(calls_mu_) {
    // Under the lock: a Cancel on another thread takes the call only after
    // this event is handed over, so the waiter hears it before the end.
    // (OnCallEvent only posts to the waiter's executor.)
    absl::MutexLock lock(&calls_mu_);
    auto it = calls_.find(event.call_ref());
    if (it != calls_.end()) {
      it->second->OnCallEvent(std::move(*event.mutable_message()));
    }
  }

  void OnCallDone(relay::v1::CallDone& done) {
    if (std::shared_ptr<CallWaiter> waiter = Take(done.call_ref())) {
      waiter->OnCallDone(ToOutcome(done));
    }
  }

  void OnLinkEnded(RouterLink* link, const grpc::Status& status) override
      ABSL_LOCKS_EXCLUDED(mu_, calls_mu_) {
    bool stopping;
    {
      absl::MutexLock lock(&mu_);
      if (link_ == link) {
        up_.store(false);
      }
      stopping = stopping_;
    }
    // Every call sent on it is lost: the router that held it is gone, or has
    // cancelled it at its tab. (New calls fail at once: the link is not up.)
    absl::flat_hash_map<uint64_t, std::shared_ptr<CallWaiter>> lost;
    {
      absl::MutexLock lock(&calls_mu_);
      lost.swap(calls_);
    }
    for (auto& [ref, waiter] : lost) {
      waiter->OnCallDone(ForwardOutcome{ForwardOutcome::Kind::kRouterUnavailable, {}, {}});
    }
    if (!stopping) {
      common::LogWarn("router link ended",
                      {{"router", address_}, {"error", status.error_message()}});
      sink_.OnLinkDown(index_);
    }
    // Last: Stop() waits for link_ to be cleared, and then the shard may go.
    absl::MutexLock lock(&mu_);
    if (link_ == link) {
      link_ = nullptr;
    }
    if (stopping_) {
      return;
    }
    backoff_ = backoff_ == absl::ZeroDuration() ? absl::Milliseconds(100)
                                                : std::min(backoff_ * 2, absl::Seconds(1));
    if (status.ok() || status.error_code() != grpc::StatusCode::UNAVAILABLE) {
      backoff_ = absl::Milliseconds(100);
    }
    ScheduleRelinkLocked();
  }

  void OnLinkEstablished() override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    backoff_ = absl::ZeroDuration();
    up_.store(true);
  }

  bool up() const { return up_.load(); }

  bool Flushed() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return link_ == nullptr || link_->Flushed();
  }

  // Stops relinking, ends the link and waits until it has ended, so that no
  // reaction runs after the client is gone.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_) {
    RouterLink* link;
    grpc::Alarm* alarm;
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;  // from here no link or alarm is made
      link = link_;
      if (link != nullptr) {
        link->Ref();
      }
      alarm = alarm_.get();
    }
    // Outside the lock: a cancel may run the reactions it causes at once.
    if (alarm != nullptr) {
      alarm->Cancel();
    }
    if (link != nullptr) {
      link->Cancel();
      link->Unref();
    }
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](Shard* shard) ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard->mu_) {
          return shard->link_ == nullptr && !shard->alarm_pending_;
        },
        this));
  }

 private:
  std::shared_ptr<CallWaiter> Take(uint64_t ref) ABSL_LOCKS_EXCLUDED(calls_mu_) {
    absl::MutexLock lock(&calls_mu_);
    auto it = calls_.find(ref);
    if (it == calls_.end()) {
      return nullptr;
    }
    std::shared_ptr<CallWaiter> waiter = std::move(it->second);
    calls_.erase(it);
    return waiter;
  }

  void ScheduleRelinkLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::uniform_real_distribution<double> jitter(0.5, 1.5);
    absl::Duration wait = backoff_ * jitter(rng_);
    alarm_ = std::make_unique<grpc::Alarm>();
    alarm_pending_ = true;
    alarm_->Set(loop_.cq(), absl::ToChronoTime(absl::Now() + wait),
                static_cast<common::CqTag*>(&relink_));
  }

  // The relink alarm's tag: fired (link again) or cancelled by Stop.
  void OnRelinkAlarm(bool fired) ABSL_LOCKS_EXCLUDED(mu_) {
    if (fired) {
      return Link();  // clears alarm_pending_ where it publishes the link
    }
    absl::MutexLock lock(&mu_);
    alarm_pending_ = false;
  }

  const size_t index_;
  const std::string address_;
  const std::string gateway_id_;
  RouterCommandSink& sink_;
  std::atomic<uint64_t>& next_ref_;
  common::CqLoop& loop_;
  const Deferrer& defer_;
  std::unique_ptr<relay::v1::Router::Stub> stub_;
  common::CallbackTag relink_{[this](bool fired) { OnRelinkAlarm(fired); }};
  absl::Mutex mu_;
  RouterLink* link_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::atomic<bool> up_{false};
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::Duration backoff_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
  std::unique_ptr<grpc::Alarm> alarm_ ABSL_GUARDED_BY(mu_);
  bool alarm_pending_ ABSL_GUARDED_BY(mu_) = false;
  std::mt19937 rng_ ABSL_GUARDED_BY(mu_){std::random_device{}()};
  absl::Mutex calls_mu_;
  absl::flat_hash_map<uint64_t, std::shared_ptr<CallWaiter>> calls_ ABSL_GUARDED_BY(calls_mu_);
};

class GrpcRouterClient final : public RouterClient {
 public:
  GrpcRouterClient(const std::vector<std::string>& addresses, const common::GrpcTls& tls,
                   std::string gateway_id,
                   RouterCommandSink& sink, common::CqLoop& loop, Deferrer defer)
      : picker_(addresses), defer_(std::move(defer)) {
    for (size_t i = 0; i < addresses.size(); ++i) {
      shards_.push_back(std::make_unique<Shard>(i, addresses[i], tls, gateway_id, sink, next_ref_,
                                                loop, defer_));
    }
    for (auto& shard : shards_) {
      shard->Link();
    }
  }

  ~GrpcRouterClient() override {
    for (auto& shard : shards_) {
      shard->Stop();
    }
  }

  void Send(const std::string& account, GatewayEvent event) override {
    shards_[picker_.Pick(account)]->Send(std::move(event));
  }

  uint64_t Forward(ForwardRequest request, std::shared_ptr<CallWaiter> waiter) override {
    Shard& shard = *shards_[picker_.Pick(request.account)];
    return shard.Forward(std::move(request), std::move(waiter));
  }

  void Cancel(const std::string& account, uint64_t call_ref, CancelReason reason) override {
    shards_[picker_.Pick(account)]->Cancel(call_ref, reason);
  }

  size_t CallsInFlight() const override {
    size_t calls = 0;
    for (const auto& shard : shards_) {
      calls += shard->CallsInFlight();
    }
    return calls;
  }

  void CancelAll(CancelReason reason) override {
    for (auto& shard : shards_) {
      shard->CancelAll(reason);
    }
  }

  size_t ShardOf(const std::string& account) const override { return picker_.Pick(account); }

  bool Flushed() const override {
    for (const auto& shard : shards_) {
      if (!shard->Flushed()) {
        return false;
      }
    }
    return true;
  }

  size_t ShardsUp() const override {
    size_t up = 0;
    for (const auto& shard : shards_) {
      up += shard->up() ? 1 : 0;
    }
    return up;
  }

 private:
  ShardPicker picker_;
  const Deferrer defer_;
  std::atomic<uint64_t> next_ref_{1};
  std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace

std::unique_ptr<RouterClient> NewGrpcRouterClient(const std::vector<std::string>& shards,
                                                  const common::GrpcTls& tls,
                                                  std::string gateway_id,
                                                  RouterCommandSink& sink, common::CqLoop& loop,
                                                  Deferrer defer) {
  return std::make_unique<GrpcRouterClient>(shards, tls, std::move(gateway_id), sink, loop,
                                            std::move(defer));
}

}  // namespace relay::gateway
