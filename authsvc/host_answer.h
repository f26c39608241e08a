#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "authsvc/host_api_client.h"

namespace relay::authsvc {

// What the host API said about a token or ticket.
struct HostAnswer {
  enum class Kind { kOk, kInvalid, kLockedOut };
  Kind kind = Kind::kInvalid;
  std::string user;
  std::string role;
  // agent/verify's "resource": whom the token was issued for (empty: not said).
  std::string resource;
  uint32_t retry_after_seconds = 0;
  // How much longer this answer may be kept by whoever hears it (what is left
  // of its time in authsvc's cache); zero: not at all.
  absl::Duration keep = absl::ZeroDuration();
};

// Interprets an HTTP reply of agent/verify or agent/redeem. 200/401/429 are
// answers; anything else (404 for a wrong relay key, 5xx, junk) means the
// host API could not be asked properly: UNAVAILABLE, never "invalid".
absl::StatusOr<HostAnswer> InterpretHostReply(const HostReply& reply);

}  // namespace relay::authsvc
