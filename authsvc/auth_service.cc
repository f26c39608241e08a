#include "authsvc/auth_service.h"

#include <deque>

#include "absl/time/clock.h"
#include "authsvc/host_answer.h"
#include "common/crypto.h"
#include "common/grpc/grpc_tls.h"
#include "common/log.h"
#include "nlohmann/json.hpp"

namespace relay::authsvc {
namespace {

using relay::v1::Verdict;

Verdict ToVerdict(HostAnswer::Kind kind) {
  switch (kind) {
    case HostAnswer::Kind::kOk:
      return relay::v1::VERDICT_OK;
    case HostAnswer::Kind::kInvalid:
      return relay::v1::VERDICT_INVALID;
    case HostAnswer::Kind::kLockedOut:
      return relay::v1::VERDICT_LOCKED_OUT;
  }
  return relay::v1::VERDICT_INVALID;
}

// The only place where an upstream failure becomes a gRPC status.
grpc::Status UpstreamFailure(const absl::Status& status) {
  common::LogWarn("host API unavailable", {{"error", status.message()}});
  return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                      "the account service (host API) could not be reached");
}

}  // namespace

grpc::ServerUnaryReactor* AuthService::VerifyToken(grpc::CallbackServerContext* context,
                                                   const relay::v1::VerifyTokenRequest* request,
                                                   relay::v1::VerifyTokenResponse* response) {
  if (!common::CallerIs(*context, common::kRoleGateway)) {
    auto* refused = context->DefaultReactor();
    refused->Finish(common::DeniedUnless(common::kRoleGateway, "Auth.VerifyToken"));
    return refused;
  }
  auto* reactor = context->DefaultReactor();
  verify_requests_.Add();
  if (request->token().empty()) {
    response->set_verdict(relay::v1::VERDICT_INVALID);
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  // The request (and so the token) lives until Finish; the cache keeps only the hash.
  auto fetch = [this, request](VerifyCache::Done done) {
    nlohmann::json body = {{"token", request->token()}, {"address", request->address()}};
    Ask("agent/verify", body.dump(), std::move(done));
  };
  cache_.Verify(common::Sha256Hex(request->token()), request->address(), fetch,
                [this, reactor, response](const VerifyCache::Result& answer) {
                  if (!answer.ok()) {
                    reactor->Finish(UpstreamFailure(answer.status()));
                    return;
                  }
                  response->set_verdict(ToVerdict(answer->kind));
                  response->set_user(answer->user);
                  response->set_role(answer->role);
                  response->set_resource(answer->resource);
                  response->set_retry_after_seconds(answer->retry_after_seconds);
                  response->set_keep_ms(
                      static_cast<uint32_t>(absl::ToInt64Milliseconds(answer->keep)));
                  reactor->Finish(grpc::Status::OK);
                });
  return reactor;
}

grpc::ServerUnaryReactor* AuthService::RedeemTicket(grpc::CallbackServerContext* context,
                                                    const relay::v1::RedeemTicketRequest* request,
                                                    relay::v1::RedeemTicketResponse* response) {
  if (!common::CallerIs(*context, common::kRoleGateway)) {
    auto* refused = context->DefaultReactor();
    refused->Finish(common::DeniedUnless(common::kRoleGateway, "Auth.RedeemTicket"));
    return refused;
  }
  auto* reactor = context->DefaultReactor();
  if (request->ticket().empty()) {
    response->set_verdict(relay::v1::VERDICT_INVALID);
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  redeem_requests_.Add();
  nlohmann::json body = {{"ticket", request->ticket()}};
  Ask("agent/redeem", body.dump(), [this, reactor, response](absl::StatusOr<HostAnswer> answer) {
    if (!answer.ok()) {
      reactor->Finish(UpstreamFailure(answer.status()));
      return;
    }
    // A ticket is never locked out; anything but OK is simply invalid.
    bool ok = answer->kind == HostAnswer::Kind::kOk;
    response->set_verdict(ok ? relay::v1::VERDICT_OK : relay::v1::VERDICT_INVALID);
    response->set_user(answer->user);
    response->set_role(answer->role);
    if (ok) {
      response->set_generation(tab_order_.Next(absl::Now()));
    }
    reactor->Finish(grpc::Status::OK);
  });
  return reactor;
}

void AuthService::Ask(const std::string& route, const std::string& body,
                      std::function<void(absl::StatusOr<HostAnswer>)> done) {
  upstream_requests_.Add();
  absl::Time started = absl::Now();
  host_api_.Post(route, body, [this, started, done = std::move(done)](
                                  absl::StatusOr<HostReply> reply) {
    if (!reply.ok()) {
      // Never sent (--max_pending_upstream), or no answer in time.
      (absl::IsResourceExhausted(reply.status()) ? upstream_refused_ : upstream_unreachable_)
          .Add();
      return done(reply.status());
    }
    upstream_seconds_.Observe(absl::ToDoubleSeconds(absl::Now() - started));
    absl::StatusOr<HostAnswer> answer = InterpretHostReply(*reply);
    if (!answer.ok()) {
      upstream_bad_answers_.Add();
    }
    done(std::move(answer));
  });
}

std::string AuthService::RenderMetrics() const {
  common::MetricsText text;
  text.Add("relay_authsvc_verify_requests_total", "VerifyToken calls.", "counter",
           verify_requests_.value());
  text.Add("relay_authsvc_redeem_requests_total", "RedeemTicket calls.", "counter",
           redeem_requests_.value());
  text.Add("relay_authsvc_upstream_requests_total", "Requests sent to the host API.", "counter",
           upstream_requests_.value());
  text.Add("relay_authsvc_upstream_failures_total",
           "Host API requests that got no usable answer, by kind.", "counter",
           upstream_unreachable_.value(), "kind=\"unreachable\"");
  text.Add("relay_authsvc_upstream_failures_total", "", "counter",
           upstream_bad_answers_.value(), "kind=\"bad_answer\"");
  text.Add("relay_authsvc_upstream_refused_total",
           "Verifications refused at once because --max_pending_upstream requests waited.",
           "counter", upstream_refused_.value());
  text.AddHistogram("relay_authsvc_upstream_duration_seconds",
                    "Host API requests that were answered, by how long they took.",
                    upstream_seconds_);
  VerifyCache::Stats cache = cache_.stats();
  text.Add("relay_authsvc_cache_entries", "Verdicts cached.", "gauge", cache.entries);
  text.Add("relay_authsvc_cache_lookups_total", "Verifications, by how the cache answered them.",
           "counter", cache.hits, "result=\"hit\"");
  text.Add("relay_authsvc_cache_lookups_total", "", "counter", cache.negative_hits,
           "result=\"negative_hit\"");
  text.Add("relay_authsvc_cache_lookups_total", "", "counter", cache.misses, "result=\"miss\"");
  text.Add("relay_authsvc_cache_lookups_total", "", "counter", cache.coalesced,
           "result=\"coalesced\"");
  {
    absl::MutexLock lock(&watchers_mu_);
    text.Add("relay_authsvc_revocation_watchers", "Gateways holding WatchRevocations open.",
             "gauge", watchers_.size());
  }
  return text.str();
}

grpc::ServerUnaryReactor* AuthService::GetStats(grpc::CallbackServerContext* context,
                                                const relay::v1::GetAuthStatsRequest*,
                                                relay::v1::AuthStats* response) {
  auto* reactor = context->DefaultReactor();
  if (!common::CallerIs(*context, common::kRoleOperator)) {
    reactor->Finish(common::DeniedUnless(common::kRoleOperator, "Auth.GetStats"));
    return reactor;
  }
  VerifyCache::Stats cache = cache_.stats();
  response->set_cache_entries(cache.entries);
  response->set_hits(cache.hits);
  response->set_negative_hits(cache.negative_hits);
  response->set_misses(cache.misses);
  response->set_coalesced(cache.coalesced);
  response->set_verify_requests(verify_requests_.value());
  response->set_redeem_requests(redeem_requests_.value());
  response->set_upstream_requests(upstream_requests_.value());
  uint64_t answered = upstream_seconds_.count();
  response->set_upstream_latency_avg_ms(answered == 0 ? 0 : upstream_seconds_.sum() * 1000 / answered);
  response->set_upstream_latency_p99_ms(upstream_seconds_.Quantile(0.99) * 1000);
  response->set_errors_unreachable(upstream_unreachable_.value());
  response->set_errors_bad_answer(upstream_bad_answers_.value());
  response->set_errors_queue_full(upstream_refused_.value());
  {
    absl::MutexLock lock(&watchers_mu_);
    response->set_revocation_watchers(static_cast<uint32_t>(watchers_.size()));
  }
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

size_t AuthService::ForgetNow(const relay::v1::ForgetRequest& what) {
  size_t dropped = 0;
  relay::v1::Revocation revocation;
  switch (what.what_case()) {
    case relay::v1::ForgetRequest::kUser:
      dropped = cache_.ForgetUser(what.user());
      revocation.set_user(what.user());
      break;
    case relay::v1::ForgetRequest::kTokenSha256:
      dropped = cache_.ForgetToken(what.token_sha256());
      revocation.set_token_sha256(what.token_sha256());
      break;
    case relay::v1::ForgetRequest::WHAT_NOT_SET:
      break;
  }
  // Before the answer: when the caller hears "done", every gateway that holds
  // the stream has been sent the revocation.
  if (revocation.what_case() != relay::v1::Revocation::WHAT_NOT_SET) {
    Publish(revocation);
  }
  common::LogInfo("cache entries forgotten", {{"dropped", static_cast<uint64_t>(dropped)}});
  return dropped;
}

grpc::ServerUnaryReactor* AuthService::Forget(grpc::CallbackServerContext* context,
                                              const relay::v1::ForgetRequest* request,
                                              relay::v1::ForgetResponse* response) {
  if (!common::CallerIs(*context, common::kRoleOperator)) {
    auto* refused = context->DefaultReactor();
    refused->Finish(common::DeniedUnless(common::kRoleOperator, "Auth.Forget"));
    return refused;
  }
  auto* reactor = context->DefaultReactor();
  // What matches nothing would answer "dropped 0", as if it had expired.
  if (request->has_token_sha256() && !common::IsSha256Hex(request->token_sha256())) {
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                 "token_sha256 must be the token's SHA-256 as 64 lowercase hex "
                                 "digits (sha256sum prints it)"));
    return reactor;
  }
  if (request->has_user() && request->user().empty()) {
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "user is empty"));
    return reactor;
  }
  size_t dropped = ForgetNow(*request);
  response->set_dropped(static_cast<uint32_t>(dropped));
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

// One gateway's revocation stream: a queue with one write in flight. Lives
// until OnDone.
class AuthService::Watcher final : public grpc::ServerWriteReactor<relay::v1::Revocation> {
 public:
  Watcher(AuthService& service, grpc::CallbackServerContext* context)
      : service_(service), context_(context) {
    // Tells the gateway at once that the stream is up.
    StartSendInitialMetadata();
  }

  // idle_only: not when something waits (a beat behind news says nothing).
  void Push(const relay::v1::Revocation& revocation, bool idle_only = false)
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (done_ || (idle_only && !queue_.empty())) {
      return;
    }
    if (queue_.size() >= kMaxQueued) {
      // A gateway that does not read its revocations: end its stream (OnCancel
      // finishes it). It keeps nothing past a second while unwatched, and
      // reconnects.
      done_ = true;
      context_->TryCancel();
      return;
    }
    queue_.push_back(revocation);
    if (!writing_) {
      writing_ = true;
      StartWrite(&queue_.front());
    }
  }

  void OnWriteDone(bool ok) override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    queue_.pop_front();
    if (!ok || done_ || queue_.empty()) {
      writing_ = false;
      return;
    }
    StartWrite(&queue_.front());
  }

  void OnCancel() override {
    {
      absl::MutexLock lock(&mu_);
      done_ = true;
    }
    Finish(grpc::Status::CANCELLED);
  }

  void OnDone() override {
    service_.RemoveWatcher(this);
    delete this;
  }

 private:
  static constexpr size_t kMaxQueued = 10000;
  AuthService& service_;
  grpc::CallbackServerContext* const context_;
  absl::Mutex mu_;
  std::deque<relay::v1::Revocation> queue_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
};

namespace {

// The answer to a caller of WatchRevocations without the gateway role.
class RefusedWatch final : public grpc::ServerWriteReactor<relay::v1::Revocation> {
 public:
  RefusedWatch() { Finish(common::DeniedUnless(common::kRoleGateway, "Auth.WatchRevocations")); }
  void OnDone() override { delete this; }
};

}  // namespace

grpc::ServerWriteReactor<relay::v1::Revocation>* AuthService::WatchRevocations(
    grpc::CallbackServerContext* context, const relay::v1::WatchRevocationsRequest* request) {
  if (!common::CallerIs(*context, common::kRoleGateway)) {
    return new RefusedWatch();
  }
  auto* watcher = new Watcher(*this, context);
  absl::MutexLock lock(&watchers_mu_);
  watchers_.insert(watcher);
  return watcher;
}

void AuthService::Publish(const relay::v1::Revocation& revocation) {
  // Pushed under the lock: a watcher leaves the set (RemoveWatcher) before it
  // is deleted, so every pointer here is alive.
  absl::MutexLock lock(&watchers_mu_);
  for (Watcher* watcher : watchers_) {
    watcher->Push(revocation);
  }
}

void AuthService::Beat() {
  const relay::v1::Revocation beat;
  absl::MutexLock lock(&watchers_mu_);
  for (Watcher* watcher : watchers_) {
    watcher->Push(beat, /*idle_only=*/true);
  }
}

void AuthService::RemoveWatcher(Watcher* watcher) {
  absl::MutexLock lock(&watchers_mu_);
  watchers_.erase(watcher);
}

}  // namespace relay::authsvc
