#pragma once

#include "absl/strings/string_view.h"
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/crypto.h"

namespace relay::gateway {

// Self-certifying Mcp-Session-Id values: "v1.<account>.<nonce>.<mac>", each
// part base64url, the MAC an HMAC-SHA256 over the rest under a secret shared
// by all gateways. Any gateway verifies an id without asking anyone, and the
// id keeps working across restarts of every part. Visible ASCII only.
class SessionIdSigner {
 public:
  explicit SessionIdSigner(std::string secret);

  std::string Issue(absl::string_view account) const;

  // The account the id was issued to, or NotFound for anything forged,
  // truncated or malformed (the caller answers 404 either way). An agent sends the same id
  // with every request, so the id this thread verified last is remembered: the same id again
  // costs a comparison (constant time) instead of an HMAC.
  absl::StatusOr<std::string> Verify(absl::string_view id) const;

  // For the signers that derive their own keys from the same secret
  // (RequestStateSigner).
  const std::string& secret() const { return secret_; }

 private:
  std::string Mac(absl::string_view signed_part) const;

  std::string secret_;
  common::HmacSha256Key key_;  // keyed by secret_
  // Names this signer in a thread's memory of the last id verified, so that a signer with
  // another secret never takes an id on another's word (an address could be reused).
  uint64_t instance_;
};

}  // namespace relay::gateway
