#include <atomic>
#include <random>

#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/batch_queue.h"
#include "common/cq_loop.h"
#include "common/log.h"
#include "gateway/rpc/channel.h"
#include "gateway/rpc/grpc_clients.h"
#include "gateway/shard_picker.h"
#include "relay/v1/router.grpc.pb.h"

namespace relay::gateway {
namespace {

using relay::v1::GatewayBatch;
using relay::v1::GatewayEvent;
using relay::v1::RouterBatch;
using relay::v1::RouterCommand;

// A batch is cut here so that one large message does not hold up the rest.
constexpr size_t kBatchBytes = 1 << 20;
// A router that stops reading: events wait up to this much, then the link ends.
constexpr size_t kMaxQueuedBytes = 256 << 20;

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

class Shard;

// One link to one router shard, driven by the gateway's gRPC thread (a
// common::CqLoop) through the completion-queue API; the I/O threads only queue
// events and start writes. Writes: one in flight; whatever is sent meanwhile
// goes out together as the next batch, so a lone call never waits for a batch
// to fill and a loaded link writes many calls at once. Once its stream has
// finished it tells the shard (which starts another) and, when no operation
// of it is still in flight and nobody holds it, deletes itself.
class RouterLink {
 public:
  RouterLink(Shard& shard, relay::v1::Router::Stub& stub, common::CqLoop& loop,
             const Deferrer& defer);

  // Any thread. False once the link has ended: the event is dropped.
  bool Send(GatewayEvent&& event) ABSL_LOCKS_EXCLUDED(mu_) {
    size_t bytes = event.ByteSizeLong();
    bool flush = false;
    {
      absl::MutexLock lock(&mu_);
      if (closed_) {
        return false;
      }
      if (!queue_.Push(std::move(event), bytes)) {
        common::LogWarn("router not reading its link; ending it");
        closed_ = true;
        context_.TryCancel();
        return false;
      }
      // A write in flight takes what waits when it completes; otherwise one
      // deferred flush takes everything of this turn.
      if (!queue_.writing() && !flush_pending_) {
        flush_pending_ = true;
        flush = true;
      }
    }
    if (flush) {
      Ref();
      defer_([this] {
        {
          absl::MutexLock lock(&mu_);
          flush_pending_ = false;
          StartWriteLocked();
        }
        Unref();
      });
    }
    return true;
  }

  // Starts the stream; events sent before are written once it is started.
  void Start() ABSL_LOCKS_EXCLUDED(mu_);
  void Cancel() { context_.TryCancel(); }

  // The link deletes itself when its stream has finished and nobody else
  // holds it (a deferred flush, or Stop while it cancels it).
  void Ref() { refs_.fetch_add(1); }
  void Unref() {
    if (refs_.fetch_sub(1) == 1) {
      delete this;
    }
  }

 private:
  enum class Op { kStarted, kMetadata, kRead, kWritten, kFinished };
  class OpTag final : public common::CqTag {
   public:
    OpTag(RouterLink* link, Op op) : link_(link), op_(op) {}
    void Proceed(bool ok) override { link_->OnCompleted(op_, ok); }

   private:
    RouterLink* link_;
    Op op_;
  };
  common::CqTag* TagFor(Op op) { return &tags_[static_cast<int>(op)]; }

  // On the loop thread.
  void OnCompleted(Op op, bool ok) ABSL_LOCKS_EXCLUDED(mu_);
  void Dispatch();
  void StartWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Finish once the read side has ended and no write is in flight.
  void MaybeFinishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::atomic<int> refs_{1};  // the stream's own, dropped once it finished
  Shard& shard_;
  common::CqLoop& loop_;
  const Deferrer& defer_;
  OpTag tags_[5] = {{this, Op::kStarted}, {this, Op::kMetadata}, {this, Op::kRead},
                    {this, Op::kWritten}, {this, Op::kFinished}};
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientAsyncReaderWriter<GatewayBatch, RouterBatch>> stream_;
  RouterBatch in_;            // the loop thread's alone
  grpc::Status status_;       // set by Finish
  absl::Mutex mu_;
  common::BatchQueue<GatewayBatch, GatewayEvent, &GatewayBatch::add_events> queue_
      ABSL_GUARDED_BY(mu_){kBatchBytes, kMaxQueuedBytes};
  bool started_ ABSL_GUARDED_BY(mu_) = false;  // the start's tag is back
  bool closed_ ABSL_GUARDED_BY(mu_) = false;        // no more writes
  bool reading_ended_ ABSL_GUARDED_BY(mu_) = false;
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;
  bool flush_pending_ ABSL_GUARDED_BY(mu_) = false;
};

// One router shard: its channel, its current link, and the calls waiting for
// an answer on it.
class Shard {
 public:
  Shard(size_t index, const std::string& address, std::string gateway_id,
        RouterCommandSink& sink, std::atomic<uint64_t>& next_ref, common::CqLoop& loop,
        const Deferrer& defer)
      : index_(index), address_(address), gateway_id_(std::move(gateway_id)), sink_(sink),
        next_ref_(next_ref), loop_(loop), defer_(defer),
        stub_(relay::v1::Router::NewStub(MakeChannel(address))) {}

  RouterCommandSink& sink() { return sink_; }

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

  // Called by the link in OnDone, before it deletes itself.
  void OnLinkEnded(RouterLink* link, const grpc::Status& status)
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

  // The router answered the link's start: it is up.
  void LinkEstablished() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    backoff_ = absl::ZeroDuration();
    up_.store(true);
  }

  bool up() const { return up_.load(); }

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
  class Relink final : public common::CqTag {
   public:
    explicit Relink(Shard& shard) : shard_(shard) {}
    void Proceed(bool ok) override {
      if (ok) {
        return shard_.Link();  // clears alarm_pending_ where it publishes the link
      }
      absl::MutexLock lock(&shard_.mu_);
      shard_.alarm_pending_ = false;
    }

   private:
    Shard& shard_;
  };

  const size_t index_;
  const std::string address_;
  const std::string gateway_id_;
  RouterCommandSink& sink_;
  std::atomic<uint64_t>& next_ref_;
  common::CqLoop& loop_;
  const Deferrer& defer_;
  std::unique_ptr<relay::v1::Router::Stub> stub_;
  Relink relink_{*this};
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

RouterLink::RouterLink(Shard& shard, relay::v1::Router::Stub& stub, common::CqLoop& loop,
                       const Deferrer& defer)
    : shard_(shard), loop_(loop), defer_(defer) {
  // The link waits for the router instead of failing while it is down, so
  // that it is up again as soon as the channel reconnects (within the
  // channel's 1 s reconnect backoff of a router's restart). Calls do not
  // wait: they fail at once while the link is not up.
  context_.set_wait_for_ready(true);
  stream_ = stub.PrepareAsyncLink(&context_, loop.cq());
}

void RouterLink::Start() {
  absl::MutexLock lock(&mu_);
  stream_->StartCall(TagFor(Op::kStarted));
  // The router sends its initial metadata at once: the link is up.
  stream_->ReadInitialMetadata(TagFor(Op::kMetadata));
}

void RouterLink::OnCompleted(Op op, bool ok) {
  bool read_more = false;
  switch (op) {
    case Op::kStarted: {
      // The start sent the call's metadata with the stream's write operations:
      // the first write (the hello) may go only now. A failed start fails the
      // reads too.
      {
        absl::MutexLock lock(&mu_);
        started_ = true;
        StartWriteLocked();
        MaybeFinishLocked();  // Finish waits for the start's tag
      }
      return;
    }
    case Op::kMetadata:
      if (ok) {
        shard_.LinkEstablished();
      }
      read_more = ok;
      break;
    case Op::kRead:
      if (ok) {
        Dispatch();
      }
      read_more = ok;
      break;
    case Op::kWritten: {
      absl::MutexLock lock(&mu_);
      queue_.Written();
      if (ok) {
        StartWriteLocked();
      } else {
        closed_ = true;  // the stream is broken; its read side ends it
      }
      MaybeFinishLocked();
      return;
    }
    case Op::kFinished:
      shard_.OnLinkEnded(this, status_);
      Unref();
      return;
  }
  absl::MutexLock lock(&mu_);
  if (read_more && !loop_.stopping()) {
    stream_->Read(&in_, TagFor(Op::kRead));
    return;
  }
  reading_ended_ = true;
  closed_ = true;
  MaybeFinishLocked();
}

void RouterLink::Dispatch() {
  // The one place where the router's commands are told apart: a call's own
  // events go to its waiter, the rest to the gateway's sessions.
  for (RouterCommand& command : *in_.mutable_commands()) {
    switch (command.command_case()) {
      case RouterCommand::kCallEvent:
        shard_.OnCallEvent(*command.mutable_call_event());
        break;
      case RouterCommand::kCallDone:
        shard_.OnCallDone(*command.mutable_call_done());
        break;
      default:
        shard_.sink().OnCommand(command);
        break;
    }
  }
  in_.Clear();
}

void RouterLink::StartWriteLocked() {
  if (closed_ || !started_ || loop_.stopping()) {
    return;
  }
  if (GatewayBatch* batch = queue_.Next()) {
    stream_->Write(*batch, TagFor(Op::kWritten));
  }
}

void RouterLink::MaybeFinishLocked() {
  if (!reading_ended_ || !started_ || finishing_ || queue_.writing() || loop_.stopping()) {
    return;
  }
  finishing_ = true;
  stream_->Finish(&status_, TagFor(Op::kFinished));
}

class GrpcRouterClient final : public RouterClient {
 public:
  GrpcRouterClient(const std::vector<std::string>& addresses, std::string gateway_id,
                   RouterCommandSink& sink, common::CqLoop& loop, Deferrer defer)
      : picker_(addresses), defer_(std::move(defer)) {
    for (size_t i = 0; i < addresses.size(); ++i) {
      shards_.push_back(std::make_unique<Shard>(i, addresses[i], gateway_id, sink, next_ref_,
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
                                                  std::string gateway_id,
                                                  RouterCommandSink& sink, common::CqLoop& loop,
                                                  Deferrer defer) {
  return std::make_unique<GrpcRouterClient>(shards, std::move(gateway_id), sink, loop,
                                            std::move(defer));
}

}  // namespace relay::gateway
