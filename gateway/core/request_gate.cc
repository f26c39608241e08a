#include "gateway/core/request_gate.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gateway/core/ws_frame.h"

namespace relay::gateway {

namespace {

// A dotted-quad IPv4 literal in 127.0.0.0/8. (A name that merely starts with
// "127." may be anybody's domain, rebound to loopback.)
bool IsLoopbackIpv4(absl::string_view name) {
  int parts = 0;
  while (true) {
    size_t dot = name.find('.');
    absl::string_view part = name.substr(0, dot);
    if (part.empty() || part.size() > 3) {
      return false;
    }
    int value = 0;
    for (char c : part) {
      if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) {
        return false;
      }
      value = value * 10 + (c - '0');
    }
    if (value > 255 || (parts == 0 && value != 127)) {
      return false;
    }
    ++parts;
    if (dot == absl::string_view::npos) {
      return parts == 4;
    }
    name.remove_prefix(dot + 1);
  }
}

GateDecision Refuse(int status, std::string message) {
  GateDecision decision;
  decision.kind = GateDecision::Kind::kRefuse;
  decision.status = status;
  decision.message = std::move(message);
  return decision;
}

}  // namespace

RequestGate::RequestGate(RequestGateOptions options) : options_(std::move(options)) {
  for (std::string& host : options_.allowed_hosts) {
    host = absl::AsciiStrToLower(host);
  }
}

GateDecision RequestGate::Decide(const RequestHead& head, bool draining) const {
  absl::string_view path = head.target.substr(0, head.target.find('?'));
  if (path == "/healthz" || path == "/readyz" || path == "/metrics") {
    GateDecision decision;
    decision.kind = GateDecision::Kind::kOperator;
    decision.path = path;
    return decision;
  }
  if (absl::StartsWith(path, "/.well-known/")) {
    // Public and the same on every gateway: no Host or Origin check (it names no account).
    if (options_.resource.IsMetadataPath(path)) {
      GateDecision decision;
      decision.kind = GateDecision::Kind::kMetadata;
      return decision;
    }
    // Other discovery probes (and all of them when agents do not sign in): a plain 404, as
    // MCP-SURFACE.md says, so that clients move on to the next place they look.
    return Refuse(404, "not found");
  }
  if (path != options_.mcp_path) {
    return Refuse(404, absl::StrCat("not found; the MCP endpoint is ", options_.mcp_path));
  }
  if (!head.host || !IsAllowedHost(*head.host)) {
    return Refuse(403, "host not allowed; add it to --allowed_hosts");
  }
  if (draining) {
    // Sessions are not tied to a gateway: another one takes the request.
    GateDecision decision =
        Refuse(503, "this relay gateway is shutting down; retry, another one will answer");
    decision.extra_headers = "Retry-After: 1\r\n";
    decision.close = true;
    return decision;
  }
  // A tab must name an allowed origin; an agent need not name one (it is not
  // a browser), but one that does must name an allowed one.
  bool origin_allowed = head.origin && IsAllowedOrigin(*head.origin);
  if (head.websocket_upgrade || head.origin) {
    if (!origin_allowed) {
      return Refuse(403, "origin not allowed; add it to --allowed_origins");
    }
  }
  if (head.websocket_upgrade) {
    if (head.ws_version.value_or("") != "13") {
      GateDecision decision = Refuse(426, "this relay speaks WebSocket version 13 (RFC 6455)");
      decision.extra_headers = "Sec-WebSocket-Version: 13\r\n";
      decision.close = true;
      return decision;
    }
    if (!IsWsKey(head.ws_key.value_or(""))) {
      GateDecision decision =
          Refuse(400, "a WebSocket upgrade needs a Sec-WebSocket-Key of 16 bytes in base64");
      decision.close = true;
      return decision;
    }
    GateDecision decision;
    decision.kind = GateDecision::Kind::kTab;
    return decision;
  }
  if (head.method != "POST" && head.method != "GET" && head.method != "DELETE") {
    GateDecision decision = Refuse(405, "use POST, GET or DELETE");
    decision.extra_headers = "Allow: GET, POST, DELETE\r\n";
    return decision;
  }
  GateDecision decision;
  decision.kind = GateDecision::Kind::kAgent;
  return decision;
}

bool RequestGate::IsAllowedOrigin(absl::string_view origin) const {
  for (const std::string& allowed : options_.allowed_origins) {
    if (allowed == origin) {
      return true;
    }
  }
  return false;
}

bool RequestGate::IsAllowedHost(absl::string_view host) const {
  // Strip the port: "[::1]:8080" -> "[::1]", "example.org:443" -> "example.org".
  absl::string_view name = host;
  if (absl::StartsWith(name, "[")) {
    size_t end = name.find(']');
    name = end == absl::string_view::npos ? name : name.substr(0, end + 1);
  } else if (size_t colon = name.rfind(':'); colon != absl::string_view::npos) {
    name = name.substr(0, colon);
  }
  std::string lower = absl::AsciiStrToLower(name);
  if (lower == "localhost" || lower == "[::1]" || IsLoopbackIpv4(lower)) {
    return true;
  }
  for (const std::string& allowed : options_.allowed_hosts) {
    if (allowed == lower) {
      return true;
    }
  }
  return false;
}

}  // namespace relay::gateway

namespace relay::gateway {

absl::string_view RequestGate::BearerToken(absl::string_view authorization) {
  constexpr absl::string_view kScheme = "Bearer ";
  if (authorization.size() <= kScheme.size() ||
      !absl::EqualsIgnoreCase(authorization.substr(0, kScheme.size()), kScheme)) {
    return {};
  }
  return absl::StripAsciiWhitespace(authorization.substr(kScheme.size()));
}

GateDecision RequestGate::RefuseRequest(int status, std::string message) {
  return Refuse(status, std::move(message));
}

GateDecision RequestGate::RefuseInvalidToken(bool token_sent) const {
  const ProtectedResource& resource = options_.resource;
  if (!resource.enabled()) {
    GateDecision decision =
        Refuse(401, "missing or invalid bearer token; create a token in the editor's account "
                    "menu and send it as Authorization: Bearer <token>");
    decision.extra_headers =
        "WWW-Authenticate: Bearer realm=\"mcp-relay\", error=\"invalid_token\"\r\n";
    return decision;
  }
  GateDecision decision = Refuse(
      401, token_sent ? "invalid, expired or revoked token, or one issued for another server; "
                        "sign in again (your MCP client follows WWW-Authenticate)"
                      : "sign in: your MCP client follows WWW-Authenticate to the host "
                        "application, or send a token made in the editor's account menu as "
                        "Authorization: Bearer <token>");
  decision.extra_headers = resource.Challenge(token_sent);
  return decision;
}

GateDecision RequestGate::RefuseLockedOut(int64_t retry_after_seconds) {
  GateDecision decision =
      Refuse(429, "too many failed attempts from this address; retry later");
  decision.extra_headers =
      absl::StrCat("Retry-After: ", std::max<int64_t>(retry_after_seconds, 1), "\r\n");
  return decision;
}

GateDecision RequestGate::RefuseAuthUnavailable() {
  return Refuse(503, "the account service could not be reached or is busy; your token was not "
                     "rejected, try again shortly");
}

}  // namespace relay::gateway
