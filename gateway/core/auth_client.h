#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace relay::gateway {

// What authsvc said about a bearer token or a tab's ticket.
struct AuthVerdict {
  enum class Kind { kOk, kInvalid, kLockedOut, kUnavailable };
  Kind kind = Kind::kUnavailable;
  std::string user;
  std::string role;
  uint32_t retry_after_seconds = 0;
  // A redeemed ticket's place in its account's order of tabs (0 otherwise).
  uint64_t generation = 0;
  // The resource (RFC 8707) the token was issued for; empty when it names none.
  std::string resource = {};
};

// What authsvc pushed (Auth.WatchRevocations): one token, by its SHA-256
// (lowercase hex), or every token of a user (a password change, the account
// deleted or renamed, an operator's forget). Exactly one is set.
struct Revocation {
  std::string user;
  std::string token_sha256;
};
// Hears every revocation, on the client's thread (it must only post).
using RevocationListener = std::function<void(const Revocation&)>;

// The gateway's view of authsvc. Implementations are thread-safe; callbacks
// run on an arbitrary thread (a gRPC callback thread, or the caller's own
// inside VerifyToken or RedeemTicket when the call is refused at once) and must
// only post work to the caller's executor.
class AuthClient {
 public:
  using Callback = std::function<void(AuthVerdict)>;
  virtual ~AuthClient() = default;

  // A verdict the gateway still keeps for the token with this SHA-256 (hex; see VerdictMemo),
  // or nothing: then VerifyToken asks authsvc.
  virtual std::optional<AuthVerdict> Memoized(const std::string& token_sha256) = 0;
  // address is the agent's address, for the host API's brake.
  virtual void VerifyToken(std::string token, std::string address, Callback done) = 0;
  virtual void RedeemTicket(std::string ticket, Callback done) = 0;
};

}  // namespace relay::gateway
