#include "authsvc/auth_service.h"

#include "authsvc/host_answer.h"
#include "common/crypto.h"
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
  auto* reactor = context->DefaultReactor();
  verify_requests_.Add();
  if (request->token().empty()) {
    response->set_verdict(relay::v1::VERDICT_INVALID);
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  // The request (and so the token) lives until Finish; the cache keeps only the hash.
  auto fetch = [this, request](VerifyCache::Done done) {
    upstream_requests_.Add();
    nlohmann::json body = {{"token", request->token()}, {"address", request->address()}};
    host_api_.Post("agent/verify", body.dump(),
                   [done = std::move(done)](absl::StatusOr<HostReply> reply) {
                     done(reply.ok() ? InterpretHostReply(*reply) : reply.status());
                   });
  };
  cache_.Verify(common::Sha256Hex(request->token()), fetch,
                [this, reactor, response](const VerifyCache::Result& answer) {
                  if (!answer.ok()) {
                    upstream_failures_.Add();
                    reactor->Finish(UpstreamFailure(answer.status()));
                    return;
                  }
                  response->set_verdict(ToVerdict(answer->kind));
                  response->set_user(answer->user);
                  response->set_role(answer->role);
                  response->set_retry_after_seconds(answer->retry_after_seconds);
                  reactor->Finish(grpc::Status::OK);
                });
  return reactor;
}

grpc::ServerUnaryReactor* AuthService::RedeemTicket(grpc::CallbackServerContext* context,
                                                    const relay::v1::RedeemTicketRequest* request,
                                                    relay::v1::RedeemTicketResponse* response) {
  auto* reactor = context->DefaultReactor();
  if (request->ticket().empty()) {
    response->set_verdict(relay::v1::VERDICT_INVALID);
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  redeem_requests_.Add();
  upstream_requests_.Add();
  nlohmann::json body = {{"ticket", request->ticket()}};
  host_api_.Post("agent/redeem", body.dump(), [this, reactor, response](absl::StatusOr<HostReply> reply) {
    auto answer = reply.ok() ? InterpretHostReply(*reply) : reply.status();
    if (!answer.ok()) {
      upstream_failures_.Add();
      reactor->Finish(UpstreamFailure(answer.status()));
      return;
    }
    // A ticket is never locked out; anything but OK is simply invalid.
    bool ok = answer->kind == HostAnswer::Kind::kOk;
    response->set_verdict(ok ? relay::v1::VERDICT_OK : relay::v1::VERDICT_INVALID);
    response->set_user(answer->user);
    response->set_role(answer->role);
    reactor->Finish(grpc::Status::OK);
  });
  return reactor;
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
           "Host API requests that got no usable answer.", "counter", upstream_failures_.value());
  return text.str();
}

grpc::ServerUnaryReactor* AuthService::Forget(grpc::CallbackServerContext* context,
                                              const relay::v1::ForgetRequest* request,
                                              relay::v1::ForgetResponse* response) {
  size_t dropped = 0;
  switch (request->what_case()) {
    case relay::v1::ForgetRequest::kUser:
      dropped = cache_.ForgetUser(request->user());
      break;
    case relay::v1::ForgetRequest::kTokenSha256:
      dropped = cache_.ForgetToken(request->token_sha256());
      break;
    case relay::v1::ForgetRequest::WHAT_NOT_SET:
      break;
  }
  common::LogInfo("cache entries forgotten", {{"dropped", static_cast<uint64_t>(dropped)}});
  response->set_dropped(static_cast<uint32_t>(dropped));
  auto* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace relay::authsvc
