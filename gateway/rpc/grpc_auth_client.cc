#include <atomic>

#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/crypto.h"
#include "common/log.h"
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

// The revocation stream: held open for the life of the client, reopened
// after a short wait whenever it ends. While it is down the memo keeps
// nothing longer than a second. Deletes itself in OnDone.
class RevocationWatch final : public grpc::ClientReadReactor<relay::v1::Revocation> {
 public:
  RevocationWatch(GrpcAuthClient& client, relay::v1::Auth::Stub& stub);
  void OnReadInitialMetadataDone(bool ok) override;
  void OnReadDone(bool ok) override;
  void OnDone(const grpc::Status& status) override;
  void Cancel() { context_.TryCancel(); }

 private:
  GrpcAuthClient& client_;
  grpc::ClientContext context_;
  relay::v1::WatchRevocationsRequest request_;
  relay::v1::Revocation in_;
};

class GrpcAuthClient final : public AuthClient {
 public:
  explicit GrpcAuthClient(const std::string& address)
      : stub_(relay::v1::Auth::NewStub(MakeChannel(address))) {
    Watch();
  }

  ~GrpcAuthClient() override {
    RevocationWatch* watch;
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
      watch = watch_;
    }
    if (alarm_ != nullptr) {
      alarm_->Cancel();
    }
    if (watch != nullptr) {
      watch->Cancel();
    }
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](GrpcAuthClient* c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(c->mu_) {
          return c->watch_ == nullptr && !c->alarm_pending_ && c->calls_ == 0;
        },
        this));
  }

  std::optional<AuthVerdict> Memoized(const std::string& token) override {
    return memo_.Find(common::Sha256Hex(token), absl::Now());
  }

  void VerifyToken(std::string token, std::string address, Callback done) override {
    auto* call = new Call<relay::v1::VerifyTokenRequest, relay::v1::VerifyTokenResponse>(
        std::move(done), *this);
    call->memo = &memo_;
    call->epoch = memo_.Epoch();
    call->token_sha256 = common::Sha256Hex(token);
    call->request.set_token(std::move(token));
    call->request.set_address(std::move(address));
    stub_->async()->VerifyToken(&call->context, &call->request, &call->response,
                                [call](grpc::Status status) { call->Done(status); });
  }

  void RedeemTicket(std::string ticket, Callback done) override {
    auto* call = new Call<relay::v1::RedeemTicketRequest, relay::v1::RedeemTicketResponse>(
        std::move(done), *this);
    call->request.set_ticket(std::move(ticket));
    stub_->async()->RedeemTicket(&call->context, &call->request, &call->response,
                                 [call](grpc::Status status) { call->Done(status); });
  }

  // The watch's reactions.
  void OnWatchUp() { memo_.SetWatched(true, absl::Now()); }
  void OnRevocation(const relay::v1::Revocation& revocation) {
    switch (revocation.what_case()) {
      case relay::v1::Revocation::kUser:
        memo_.ForgetUser(revocation.user());
        break;
      case relay::v1::Revocation::kTokenSha256:
        memo_.ForgetToken(revocation.token_sha256());
        break;
      case relay::v1::Revocation::WHAT_NOT_SET:
        break;
    }
  }
  void OnWatchEnded(RevocationWatch* watch) ABSL_LOCKS_EXCLUDED(mu_) {
    memo_.SetWatched(false, absl::Now());
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
    alarm_->Set(absl::ToChronoTime(absl::Now() + absl::Milliseconds(500)), [this](bool ok) {
      if (ok) {
        return Watch();  // clears alarm_pending_ where it publishes the watch
      }
      absl::MutexLock lock(&mu_);
      alarm_pending_ = false;
    });
  }

 private:
  // Reactions never run inline in gRPC 1.51's callback API, so the watch is
  // started under mu_ and published before any of its reactions can run.
  void Watch() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    alarm_pending_ = false;
    if (!stopping_) {
      watch_ = new RevocationWatch(*this, *stub_);
    }
  }

  // The destructor waits for the calls in flight: their answers touch memo_.
  void CallStarted() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    ++calls_;
  }
  void CallEnded() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    --calls_;
  }

  template <typename Request, typename Response>
  struct Call {
    Call(Callback done, GrpcAuthClient& client) : done(std::move(done)), client(client) {
      // authsvc bounds its own upstream wait; this only catches a hung authsvc.
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      client.CallStarted();
    }
    void Done(const grpc::Status& status) {
      AuthVerdict verdict;
      if (status.ok()) {
        verdict.kind = ToKind(response.verdict());
        verdict.user = response.user();
        verdict.role = response.role();
        if constexpr (std::is_same_v<Response, relay::v1::VerifyTokenResponse>) {
          verdict.retry_after_seconds = response.retry_after_seconds();
          memo->Put(token_sha256, verdict, absl::Milliseconds(response.keep_ms()), epoch,
                    absl::Now());
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
    Callback done;
    VerdictMemo* memo = nullptr;
    uint64_t epoch = 0;
    std::string token_sha256;
    GrpcAuthClient& client;
  };

  std::unique_ptr<relay::v1::Auth::Stub> stub_;
  VerdictMemo memo_;
  absl::Mutex mu_;
  RevocationWatch* watch_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::unique_ptr<grpc::Alarm> alarm_;  // replaced only in OnWatchEnded, before stopping
  bool alarm_pending_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int calls_ ABSL_GUARDED_BY(mu_) = 0;
};

RevocationWatch::RevocationWatch(GrpcAuthClient& client, relay::v1::Auth::Stub& stub)
    : client_(client) {
  context_.set_wait_for_ready(true);
  stub.async()->WatchRevocations(&context_, &request_, this);
  StartRead(&in_);
  StartCall();
}

void RevocationWatch::OnReadInitialMetadataDone(bool ok) {
  if (ok) {
    client_.OnWatchUp();
  }
}

void RevocationWatch::OnReadDone(bool ok) {
  if (!ok) {
    return;
  }
  client_.OnRevocation(in_);
  StartRead(&in_);
}

void RevocationWatch::OnDone(const grpc::Status& status) {
  client_.OnWatchEnded(this);
  delete this;
}

}  // namespace

std::unique_ptr<AuthClient> NewGrpcAuthClient(const std::string& address) {
  return std::make_unique<GrpcAuthClient>(address);
}

}  // namespace relay::gateway
