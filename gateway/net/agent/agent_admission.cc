#include "gateway/net/agent/agent_admission.h"

#include <optional>
#include <utility>

#include <boost/asio/post.hpp>

#include "common/clock.h"
#include "common/crypto.h"

namespace relay::gateway {

void AgentAdmission::Check(absl::string_view authorization,
                           absl::FunctionRef<std::string()> client_address) {
  // Before the verdict is looked up or asked for: whatever was revoked after this may not be
  // in it.
  revocation_mark_ = state_.revocations->Mark();
  std::string address;
  // An address the host API's brake locked out is answered here until its
  // Retry-After, without asking authsvc (the check costs nothing while no
  // address is locked out).
  if (!state_.lockouts.empty()) {
    address = client_address();
    if (auto left = state_.lockouts.Remaining(address, common::MonotonicNow())) {
      state_.metrics.locked_out.Add();
      return owner_.OnRefused(RequestGate::RefuseLockedOut(
          absl::ToInt64Seconds(absl::Ceil(*left, absl::Seconds(1)))));
    }
  }
  absl::string_view token = RequestGate::BearerToken(authorization);
  if (token.empty()) {
    state_.metrics.unauthorized.Add();
    return owner_.OnRefused(state_.gate.RefuseInvalidToken(/*token_sent=*/false));
  }
  Digest(token);
  if (std::optional<AuthVerdict> known = state_.auth->Memoized(bearer_sha256_)) {
    return OnVerdict(*std::move(known), address);
  }
  std::string bearer(token);
  if (address.empty()) {
    address = client_address();
  }
  pending_ = true;
  state_.auth->VerifyToken(
      std::move(bearer), address,
      [this, owner = owner_.KeepAlive(), address](AuthVerdict verdict) {
        boost::asio::post(executor_,
                          [this, owner, address, verdict = std::move(verdict)]() mutable {
                            pending_ = false;
                            OnVerdict(std::move(verdict), address);
                          });
      });
}

void AgentAdmission::Digest(absl::string_view bearer) {
  if (!bearer_sha256_.empty() && common::SecureEquals(bearer, bearer_)) {
    return;
  }
  bearer_.assign(bearer.data(), bearer.size());
  bearer_sha256_ = common::Sha256Hex(bearer);
}

void AgentAdmission::OnVerdict(AuthVerdict verdict, const std::string& address) {
  switch (verdict.kind) {
    case AuthVerdict::Kind::kOk:
      // RFC 8707: a good token, but issued for another server, is refused as an unknown one.
      if (!state_.gate.options().resource.Accepts(verdict.resource)) {
        state_.metrics.unauthorized.Add();
        return owner_.OnRefused(state_.gate.RefuseInvalidToken(/*token_sent=*/true));
      }
      return owner_.OnAdmitted(std::move(verdict.user), std::move(verdict.role));
    case AuthVerdict::Kind::kInvalid:
      state_.metrics.unauthorized.Add();
      return owner_.OnRefused(state_.gate.RefuseInvalidToken(/*token_sent=*/true));
    case AuthVerdict::Kind::kLockedOut:
      state_.metrics.locked_out.Add();
      // Remembered, so that the address's next requests are refused here.
      if (!address.empty() && verdict.retry_after_seconds > 0) {
        absl::Time now = common::MonotonicNow();
        state_.lockouts.Put(address, now + absl::Seconds(verdict.retry_after_seconds), now);
      }
      return owner_.OnRefused(RequestGate::RefuseLockedOut(verdict.retry_after_seconds));
    case AuthVerdict::Kind::kUnavailable:
      state_.metrics.auth_unavailable.Add();
      return owner_.OnRefused(RequestGate::RefuseAuthUnavailable());
  }
}

}  // namespace relay::gateway
