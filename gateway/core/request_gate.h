#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "gateway/core/protected_resource.h"

namespace relay::gateway {

// The head of an HTTP request to the gateway, as the gate sees it.
struct RequestHead {
  absl::string_view target;  // path and query
  absl::string_view method;  // "GET", "POST", ...
  std::optional<absl::string_view> host;
  std::optional<absl::string_view> origin;
  bool websocket_upgrade = false;
  // An upgrade's Sec-WebSocket-Version and Sec-WebSocket-Key.
  std::optional<absl::string_view> ws_version;
  std::optional<absl::string_view> ws_key;
};

// What to do with a request, decided from its head alone (before any bearer
// or body is looked at).
struct GateDecision {
  enum class Kind {
    kOperator,      // /healthz, /readyz, /metrics: path says which
    kRefuse,        // answer status with message (JSON {"error": message})
    kTab,           // a tab's WebSocket upgrade: hand the connection to a tab session
    kAgent,         // an agent's MCP request: check the bearer next
    kMetadata,      // the protected resource metadata (RFC 9728): GET answers it
  };
  Kind kind = Kind::kRefuse;
  absl::string_view path;
  int status = 0;
  std::string message;
  std::string extra_headers;  // "Name: value\r\n" lines
  bool close = false;         // close the connection after the answer
};

struct RequestGateOptions {
  std::string mcp_path = "/mcp";
  // Browser origins allowed to call the MCP endpoint or open a tab.
  std::vector<std::string> allowed_origins;
  // Host names (besides loopback) a request may name: DNS-rebinding protection.
  std::vector<std::string> allowed_hosts;
  // The sign-in (--public_url, --authorization_server); disabled by default.
  ProtectedResource resource;
};

// The agent and tab requests' admission rules (path, Host, Origin, method, the
// drain), in the order a client meets them. Plain C++, thread-safe (const).
class RequestGate {
 public:
  explicit RequestGate(RequestGateOptions options);

  GateDecision Decide(const RequestHead& head, bool draining) const;

  // An exact match of one of --allowed_origins.
  bool IsAllowedOrigin(absl::string_view origin) const;
  // Loopback names (localhost, 127.x.y.z, [::1]) or one of --allowed_hosts,
  // case-insensitive, with any port.
  bool IsAllowedHost(absl::string_view host) const;

  const RequestGateOptions& options() const { return options_; }

  // After the head: the bearer. The token of an Authorization header
  // ("Bearer <token>", the scheme in any case); empty when there is none.
  static absl::string_view BearerToken(absl::string_view authorization);
  // The answers when the bearer is not accepted: missing or invalid (401 with
  // WWW-Authenticate), an address the host API's brake holds off (429 with
  // Retry-After, at least 1 s), the account service unreachable (503).
  // token_sent: the request carried a token (error="invalid_token" in the challenge).
  GateDecision RefuseInvalidToken(bool token_sent) const;
  static GateDecision RefuseLockedOut(int64_t retry_after_seconds);
  static GateDecision RefuseAuthUnavailable();
  // Any other refusal: status with {"error": message}.
  static GateDecision RefuseRequest(int status, std::string message);

 private:
  RequestGateOptions options_;
};

}  // namespace relay::gateway
