#pragma once

#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "gateway/core/request_gate.h"
#include "gateway/net/gateway_state.h"
#include "gateway/core/auth_client.h"

namespace relay::gateway {

// Who an agent request is from, decided after its head passed the gate: an
// address the host API's brake holds off is refused from the gateway's
// memory of it; the bearer is looked up in the gateway's memory of authsvc's
// verdicts (no RPC, no thread handoff) and only otherwise asked of authsvc.
// One per connection, on its I/O thread.
class AgentAdmission {
 public:
  class Owner {
   public:
    virtual ~Owner() = default;
    // Held while authsvc is asked.
    virtual std::shared_ptr<void> KeepAlive() = 0;
    // role: the token's (agent/verify), which picks the catalogue view.
    virtual void OnAdmitted(std::string account, std::string role) = 0;
    virtual void OnRefused(const GateDecision& refusal) = 0;
  };

  AgentAdmission(GatewayState& state, Owner& owner, boost::asio::any_io_executor executor)
      : state_(state), owner_(owner), executor_(std::move(executor)) {}

  // Decides on the request with this Authorization header; client_address
  // (the address the brake sees) is called at most once, before Check
  // returns. The owner hears the answer on its I/O thread, now or once authsvc
  // answered.
  void Check(absl::string_view authorization, absl::FunctionRef<std::string()> client_address);
  // authsvc is being asked: the owner hears later.
  bool pending() const { return pending_; }
  // The SHA-256 (hex) of the bearer Check last saw: how the verdict memo and a revocation name
  // it.
  const std::string& bearer_sha256() const { return bearer_sha256_; }
  // The revocations heard when Check began (RecentRevocations::Mark): a stream opened on its
  // verdict ends if one of its token or user came after.
  uint64_t revocation_mark() const { return revocation_mark_; }

 private:
  void OnVerdict(AuthVerdict verdict, const std::string& address);
  // Hashes the bearer unless it is the one this connection sent last.
  void Digest(absl::string_view bearer);

  GatewayState& state_;
  Owner& owner_;
  boost::asio::any_io_executor executor_;
  bool pending_ = false;
  // An agent sends the same bearer on every request of a connection: its SHA-256 is taken once
  // (a quarter of the gateway's own work per call was hashing it and the session id). The
  // bearer is held only as long as the connection that sent it, and compared in constant time.
  std::string bearer_;
  std::string bearer_sha256_;
  uint64_t revocation_mark_ = 0;
};

}  // namespace relay::gateway
