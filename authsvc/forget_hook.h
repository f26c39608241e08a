#pragma once

#include <functional>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/metrics.h"
#include "relay/v1/auth.pb.h"

namespace relay::authsvc {

// POST /forget on authsvc's operator port: the host API's way to say "this
// token was revoked" or "this account changed" the moment it happens (it
// speaks HTTP, not gRPC), so that the agent's next request is refused rather
// than one verify TTL later. The caller proves it holds the relay key without
// sending it (the hook may be plain http inside a deployment):
// X-Relay-Signature: t=UNIX_SECONDS,v1=HEX, HEX the HMAC-SHA256 under the
// relay key of "UNIX_SECONDS.BODY", accepted for 5 minutes either side of
// now (a replay within them only forgets again). Body: {"user": NAME} or
// {"tokenSha256": 64 lowercase hex digits}; answer {"dropped": N}.
// Plain logic: forget does the work (AuthService::ForgetNow).
std::optional<common::OperatorReply> AnswerForgetHook(
    const common::OperatorRequest& request, const std::string& relay_key,
    const std::function<size_t(const relay::v1::ForgetRequest&)>& forget, absl::Time now);

// The X-Relay-Signature of body at time now (what the host API sends; tests).
std::string SignForget(const std::string& relay_key, absl::string_view body, absl::Time now);

}  // namespace relay::authsvc
