#include <atomic>

#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/clock.h"
#include "common/grpc/cq_loop.h"
#include "common/crypto.h"
#include "common/log.h"
#include "gateway/core/call_gate.h"
#include "gateway/core/verdict_memo.h"
#include "gateway/rpc/channel.h"
#include "gateway/rpc/grpc_clients.h"
#include "relay/v1/auth.grpc.pb.h"

namespace relay::gateway {
namespace {

AuthVerdict::Kind ToKind(relay::v1::Verdict verdict) {
  switch (verdict) {
    case relay::v1::VERDICT_OK:
      return AuthVerdict::Kind::kOk;
    case relay::v1::VERDICT_LOCKED_OUT:
      return AuthVerdict::Kind::kLockedOut;
    default:
      return AuthVerdict::Kind::kInvalid;
  }
}

class GrpcAuthClient;

// The revocation stream, on the gateway's gRPC loop: held open for the life
// of the client, reopened after a short wait whenever it ends. While it is
// down the memo keeps nothing longer than a second. Deletes itself once its
// stream has finished.
class RevocationWatch {
 public:
  RevocationWatch(GrpcAuthClient& client, relay::v1::Auth::Stub& stub, common::CqLoop& loop);
  void Cancel() { context_.TryCancel(); }

 private:
  enum class Op { kStarted, kMetadata, kRead, kFinished };
  using OpTag = common::OpTag<RevocationWatch, Op>;
  friend OpTag;
  void OnCompleted(Op op, bool ok);
  common::CqTag* TagFor(Op op) { return &tags_[static_cast<int>(op)]; }

  GrpcAuthClient& client_;
  common::CqLoop& loop_;
  OpTag tags_[4] = {{this, Op::kStarted}, {this, Op::kMetadata}, {this, Op::kRead},
                    {this, Op::kFinished}};
  grpc::ClientContext context_;
  relay::v1::WatchRevocationsRequest request_;
  std::unique_ptr<grpc::ClientAsyncReader<relay::v1::Revocation>> stream_;
  relay::v1::Revocation in_;
  grpc::Status status_;
  bool started_back_ = false;   // both on the loop thread
  bool finished_back_ = false;
};

class GrpcAuthClient final : public AuthClient {
 public:
  GrpcAuthClient(const std::string& address, const common::ServiceTls& tls, common::CqLoop& loop,
                 RevocationListener on_revoked)
      : loop_(loop), stub_(relay::v1::Auth::NewStub(MakeChannel(address, tls))),
        on_revoked_(std::move(on_revoked)) {
    Watch();
  }

  ~GrpcAuthClient() override {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    // Those that wait will not be asked: they hear "unavailable" (outside the lock: their
    // callbacks only post).
    for (CallGate::Waiting& waiting : gate_.TakeWaiting()) {
      waiting.refuse();
    }
    absl::MutexLock lock(&mu_);
    // Under the lock: the watch deletes itself once it has ended, which it
    // reports (OnWatchEnded) under this lock first. (Completion-queue tags
    // never run inline, so cancelling here cannot re-enter.)
    if (alarm_ != nullptr) {
      alarm_->Cancel();
    }
    if (watch_ != nullptr) {
      watch_->Cancel();
    }
    mu_.Await(absl::Condition(
        +[](GrpcAuthClient* c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(c->mu_) {
          return c->watch_ == nullptr && !c->alarm_pending_ && c->calls_ == 0;
        },
        this));
  }

  std::optional<AuthVerdict> Memoized(const std::string& token_sha256) override {
    return memo_.Find(token_sha256, common::MonotonicNow());
  }

  void VerifyToken(std::string token, std::string address, Callback done) override {
    Admit(
        [this, token = std::move(token), address = std::move(address)](Callback done) mutable {
          auto* call = new Call<relay::v1::VerifyTokenRequest, relay::v1::VerifyTokenResponse>(
              std::move(done), *this);
          call->memo = &memo_;
          call->epoch = memo_.Epoch();
          call->token_sha256 = common::Sha256Hex(token);
          call->request.set_token(std::move(token));
          call->request.set_address(std::move(address));
          call->Start(stub_->PrepareAsyncVerifyToken(&call->context, call->request, loop_.cq()));
        },
        std::move(done));
  }

  void RedeemTicket(std::string ticket, Callback done) override {
    Admit(
        [this, ticket = std::move(ticket)](Callback done) mutable {
          auto* call = new Call<relay::v1::RedeemTicketRequest, relay::v1::RedeemTicketResponse>(
              std::move(done), *this);
          call->request.set_ticket(std::move(ticket));
          call->Start(stub_->PrepareAsyncRedeemTicket(&call->context, call->request, loop_.cq()));
        },
        std::move(done));
  }

  // The watch's news.
  void OnWatchUp() { memo_.SetWatched(true, common::MonotonicNow()); }
  void OnRevocation(const relay::v1::Revocation& revocation) {
    memo_.Heard(common::MonotonicNow());
    Revocation revoked;
    switch (revocation.what_case()) {
      case relay::v1::Revocation::kUser:
        memo_.ForgetUser(revocation.user());
        revoked.user = revocation.user();
        break;
      case relay::v1::Revocation::kTokenSha256:
        memo_.ForgetToken(revocation.token_sha256());
        revoked.token_sha256 = revocation.token_sha256();
        break;
      case relay::v1::Revocation::WHAT_NOT_SET:
        return;  // a beat: authsvc is there, and had nothing to revoke
    }
    // What is already open with it ends too (ARCHITECTURE.md "Faults").
    if (on_revoked_) {
      on_revoked_(revoked);
    }
  }
  void OnWatchEnded(RevocationWatch* watch) ABSL_LOCKS_EXCLUDED(mu_) {
    memo_.SetWatched(false, common::MonotonicNow());
    absl::MutexLock lock(&mu_);
    if (watch_ == watch) {
      watch_ = nullptr;
    }
    if (stopping_) {
      return;
    }
    // authsvc restarting: try again soon; verdicts are short-lived meanwhile.
    alarm_ = std::make_unique<grpc::Alarm>();
    alarm_pending_ = true;
    alarm_->Set(loop_.cq(), absl::ToChronoTime(absl::Now() + absl::Milliseconds(500)),
                static_cast<common::CqTag*>(&rewatch_));
  }

 private:
  // The rewatch alarm's tag: fired (watch again) or cancelled by the destructor.
  void OnRewatchAlarm(bool fired) ABSL_LOCKS_EXCLUDED(mu_) {
    if (fired) {
      return Watch();  // clears alarm_pending_ where it publishes the watch
    }
    absl::MutexLock lock(&mu_);
    alarm_pending_ = false;
  }

  // The watch's operations come back on the loop thread, which is this one
  // or will see watch_ only after the lock is released.
  void Watch() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    alarm_pending_ = false;
    if (!stopping_) {
      watch_ = new RevocationWatch(*this, *stub_, loop_);
    }
  }

  // The destructor waits for the calls in flight: their answers touch memo_.
  void CallStarted() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    ++calls_;
  }
  // Its place goes to the next call that waited (refused if the client is ending).
  void CallEnded() ABSL_LOCKS_EXCLUDED(mu_) {
    CallGate::Released next = gate_.Leave(common::MonotonicNow());
    for (;;) {
      for (CallGate::Waiting& refused : next.refused) {
        refused.refuse();
      }
      if (!next.start) {
        break;
      }
      if (!Stopping()) {
        next.start->start();
        break;
      }
      next.start->refuse();
      next = gate_.Leave(common::MonotonicNow());  // the place it was given is free again
    }
    absl::MutexLock lock(&mu_);
    --calls_;
  }
  bool Stopping() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return stopping_;
  }

  // Starts a call through the gate: now, when a place frees, or never (the queue is full, or
  // it waited too long): then done hears kUnavailable, which the agent or tab hears as "try
  // again shortly". start is given done.
  template <typename Start>
  void Admit(Start start, Callback done) {
    auto shared_done = std::make_shared<Callback>(std::move(done));
    CallGate::Waiting call{
        [start = std::make_shared<Start>(std::move(start)), shared_done] {
          (*start)(std::move(*shared_done));
        },
        [shared_done] { (*shared_done)(AuthVerdict{}); }, common::MonotonicNow()};
    if (Stopping()) {
      return call.refuse();  // the destructor waits for the calls it has seen, not a new one
    }
    switch (gate_.Enter(call)) {
      case CallGate::Entry::kStartNow:
        // Nobody waits again: a refusing spell, if any, has ended.
        if (refused_.load(std::memory_order_relaxed) != 0) {
          if (uint64_t refused = refused_.exchange(0); refused != 0) {
            common::LogInfo("authsvc keeps up again", {{"refused", refused}});
          }
        }
        return call.start();
      case CallGate::Entry::kWaiting:
        return;
      case CallGate::Entry::kRefused:
        // Once a spell, not once a call: a storm refuses thousands.
        if (refused_.fetch_add(1, std::memory_order_relaxed) == 0) {
          common::LogWarn(
              "authsvc does not keep up: verifications that could not start within 10 s are "
              "refused (the tab or agent is told to try again) until it does");
        }
        return call.refuse();
    }
  }

  // One unary call; its answer comes back on the loop thread.
  template <typename Request, typename Response>
  struct Call final : common::CqTag {
    Call(Callback done, GrpcAuthClient& client) : done(std::move(done)), client(client) {
      // authsvc bounds its own upstream wait; this only catches a hung authsvc.
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      client.CallStarted();
    }
    void Start(std::unique_ptr<grpc::ClientAsyncResponseReader<Response>> call) {
      rpc = std::move(call);
      rpc->StartCall();
      rpc->Finish(&response, &status, static_cast<common::CqTag*>(this));
    }
    void Proceed(bool /*ok*/) override {
      AuthVerdict verdict;
      if (status.ok()) {
        verdict.kind = ToKind(response.verdict());
        verdict.user = response.user();
        verdict.role = response.role();
        if constexpr (std::is_same_v<Response, relay::v1::VerifyTokenResponse>) {
          verdict.retry_after_seconds = response.retry_after_seconds();
          verdict.resource = response.resource();
          memo->Put(token_sha256, verdict, absl::Milliseconds(response.keep_ms()), epoch,
                    common::MonotonicNow());
        } else {
          verdict.generation = response.generation();
        }
      }
      done(std::move(verdict));
      GrpcAuthClient& owner = client;
      delete this;
      owner.CallEnded();
    }
    grpc::ClientContext context;
    Request request;
    Response response;
    grpc::Status status;
    std::unique_ptr<grpc::ClientAsyncResponseReader<Response>> rpc;
    Callback done;
    VerdictMemo* memo = nullptr;
    uint64_t epoch = 0;
    std::string token_sha256;
    GrpcAuthClient& client;
  };

  common::CqLoop& loop_;
  std::unique_ptr<relay::v1::Auth::Stub> stub_;
  VerdictMemo memo_;
  CallGate gate_;
  const RevocationListener on_revoked_;
  absl::Mutex mu_;
  RevocationWatch* watch_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::unique_ptr<grpc::Alarm> alarm_;  // replaced only in OnWatchEnded, before stopping
  common::CallbackTag rewatch_{[this](bool fired) { OnRewatchAlarm(fired); }};
  bool alarm_pending_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int calls_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<uint64_t> refused_{0};  // by the gate since a call last started at once
};

RevocationWatch::RevocationWatch(GrpcAuthClient& client, relay::v1::Auth::Stub& stub,
                                 common::CqLoop& loop)
    : client_(client), loop_(loop) {
  context_.set_wait_for_ready(true);
  stream_ = stub.PrepareAsyncWatchRevocations(&context_, request_, loop.cq());
  stream_->StartCall(TagFor(Op::kStarted));
  stream_->ReadInitialMetadata(TagFor(Op::kMetadata));
}

void RevocationWatch::OnCompleted(Op op, bool ok) {
  switch (op) {
    case Op::kStarted:
      started_back_ = true;
      break;
    case Op::kMetadata:
    case Op::kRead:
      if (ok && op == Op::kMetadata) {
        client_.OnWatchUp();
      } else if (ok) {
        client_.OnRevocation(in_);
      }
      if (ok && !loop_.stopping()) {
        stream_->Read(&in_, TagFor(Op::kRead));
      } else if (!loop_.stopping()) {
        stream_->Finish(&status_, TagFor(Op::kFinished));
      }
      return;
    case Op::kFinished:
      finished_back_ = true;
      client_.OnWatchEnded(this);
      break;
  }
  // The start's tag may come back after Finish's.
  if (started_back_ && finished_back_) {
    delete this;
  }
}

}  // namespace

std::unique_ptr<AuthClient> NewGrpcAuthClient(const std::string& address, const common::ServiceTls& tls,
                                              common::CqLoop& loop,
                                              RevocationListener on_revoked) {
  return std::make_unique<GrpcAuthClient>(address, tls, loop, std::move(on_revoked));
}

}  // namespace relay::gateway
