#pragma once

#include <functional>
#include <string>

#include "common/metrics.h"
#include "relay/v1/auth.pb.h"

namespace relay::authsvc {

// POST /forget on authsvc's operator port: the host API's way to say "this
// token was revoked" or "this account changed" the moment it happens (it
// speaks HTTP, not gRPC), so that the agent's next request is refused rather
// than one verify TTL later. The caller proves itself with the relay key
// (X-Relay-Key), as authsvc does toward it. Body: {"user": NAME} or
// {"tokenSha256": 64 lowercase hex digits}; answer {"dropped": N}.
// Plain logic: forget does the work (AuthService::ForgetNow).
std::optional<common::OperatorReply> AnswerForgetHook(
    const common::OperatorRequest& request, const std::string& relay_key,
    const std::function<size_t(const relay::v1::ForgetRequest&)>& forget);

}  // namespace relay::authsvc
