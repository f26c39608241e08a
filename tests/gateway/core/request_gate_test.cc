#include "gateway/core/request_gate.h"

#include <gtest/gtest.h>

namespace relay::gateway {
namespace {

RequestGate Gate() {
  return RequestGate({.mcp_path = "/mcp",
                      .allowed_origins = {"https://editor.example"},
                      .allowed_hosts = {"Relay.Example"},
                      .resource = {}});
}

RequestHead Post(absl::string_view target = "/mcp") {
  RequestHead head;
  head.target = target;
  head.method = "POST";
  head.host = "127.0.0.1:8080";
  return head;
}

TEST(RequestGateTest, OperatorPathsComeFirstWhateverTheHost) {
  RequestHead head = Post("/readyz?verbose=1");
  head.host = std::nullopt;
  GateDecision decision = Gate().Decide(head, /*draining=*/true);
  EXPECT_EQ(decision.kind, GateDecision::Kind::kOperator);
  EXPECT_EQ(decision.path, "/readyz");
}

TEST(RequestGateTest, UnknownPathsAndOAuthProbesGet404) {
  EXPECT_EQ(Gate().Decide(Post("/.well-known/oauth-authorization-server"), false).status, 404);
  GateDecision other = Gate().Decide(Post("/other"), false);
  EXPECT_EQ(other.status, 404);
  EXPECT_EQ(other.message, "not found; the MCP endpoint is /mcp");
  EXPECT_EQ(Gate().Decide(Post("/mcp?x=1"), false).kind, GateDecision::Kind::kAgent);
}

TEST(RequestGateTest, LoopbackAndConfiguredHostsOnly) {
  RequestGate gate = Gate();
  for (absl::string_view host : {"localhost", "LOCALHOST:3000", "127.0.0.1", "127.1.2.3:80",
                                 "[::1]", "[::1]:8080", "relay.example", "relay.EXAMPLE:443"}) {
    EXPECT_TRUE(gate.IsAllowedHost(host)) << host;
  }
  // DNS rebinding: an attacker's name that resolves to loopback is still not ours.
  for (absl::string_view host : {"evil.example", "127.evil.example", "127.0.0.1.evil.example",
                                 "localhost.evil.example", "127.0.0.256", "128.0.0.1", "127.0.0",
                                 "", "[::2]", "relay.example.evil"}) {
    EXPECT_FALSE(gate.IsAllowedHost(host)) << host;
  }
  RequestHead head = Post();
  head.host = "evil.example";
  GateDecision decision = gate.Decide(head, false);
  EXPECT_EQ(decision.status, 403);
  EXPECT_EQ(decision.message, "host not allowed; add it to --allowed_hosts");
  head.host = std::nullopt;
  EXPECT_EQ(gate.Decide(head, false).status, 403);
}

TEST(RequestGateTest, OriginIsExactAndOptionalForAgents) {
  RequestGate gate = Gate();
  EXPECT_TRUE(gate.IsAllowedOrigin("https://editor.example"));
  EXPECT_FALSE(gate.IsAllowedOrigin("https://editor.example:443"));
  EXPECT_FALSE(gate.IsAllowedOrigin("https://EDITOR.example"));
  EXPECT_FALSE(gate.IsAllowedOrigin("null"));
  RequestHead head = Post();
  EXPECT_EQ(gate.Decide(head, false).kind, GateDecision::Kind::kAgent);  // not a browser
  head.origin = "https://evil.example";
  GateDecision decision = gate.Decide(head, false);
  EXPECT_EQ(decision.status, 403);
  EXPECT_EQ(decision.message, "origin not allowed; add it to --allowed_origins");
  head.origin = "https://editor.example";
  EXPECT_EQ(gate.Decide(head, false).kind, GateDecision::Kind::kAgent);
}

TEST(RequestGateTest, ATabMustNameAnAllowedOrigin) {
  RequestHead head = Post();
  head.method = "GET";
  head.websocket_upgrade = true;
  EXPECT_EQ(Gate().Decide(head, false).status, 403);
  head.origin = "https://editor.example";
  head.ws_version = "13";
  head.ws_key = "dGhlIHNhbXBsZSBub25jZQ==";
  EXPECT_EQ(Gate().Decide(head, false).kind, GateDecision::Kind::kTab);
}

TEST(RequestGateTest, AnUpgradeNeedsVersion13AndAKey) {
  RequestHead head = Post();
  head.method = "GET";
  head.websocket_upgrade = true;
  head.origin = "https://editor.example";
  head.ws_key = "dGhlIHNhbXBsZSBub25jZQ==";
  GateDecision decision = Gate().Decide(head, false);
  EXPECT_EQ(decision.status, 426);
  EXPECT_EQ(decision.extra_headers, "Sec-WebSocket-Version: 13\r\n");
  head.ws_version = "8";
  EXPECT_EQ(Gate().Decide(head, false).status, 426);
  head.ws_version = "13";
  head.ws_key = "too-short";
  decision = Gate().Decide(head, false);
  EXPECT_EQ(decision.status, 400);
  EXPECT_TRUE(decision.close);
  head.ws_key = std::nullopt;
  EXPECT_EQ(Gate().Decide(head, false).status, 400);
}

TEST(RequestGateTest, OnlyPostGetAndDelete) {
  RequestHead head = Post();
  for (absl::string_view method : {"POST", "GET", "DELETE"}) {
    head.method = method;
    EXPECT_EQ(Gate().Decide(head, false).kind, GateDecision::Kind::kAgent) << method;
  }
  head.method = "PUT";
  GateDecision decision = Gate().Decide(head, false);
  EXPECT_EQ(decision.status, 405);
  EXPECT_EQ(decision.extra_headers, "Allow: GET, POST, DELETE\r\n");
}

TEST(RequestGateTest, DrainingSendsAgentsAndTabsElsewhere) {
  RequestHead head = Post();
  GateDecision decision = Gate().Decide(head, /*draining=*/true);
  EXPECT_EQ(decision.status, 503);
  EXPECT_TRUE(decision.close);
  EXPECT_EQ(decision.extra_headers, "Retry-After: 1\r\n");
  head.websocket_upgrade = true;
  head.origin = "https://editor.example";
  EXPECT_EQ(Gate().Decide(head, true).status, 503);
  // A wrong Host is still told so first.
  head.host = "evil.example";
  EXPECT_EQ(Gate().Decide(head, true).status, 403);
}

TEST(RequestGateTest, BearerTokenTakesTheSchemeInAnyCaseAndTrims) {
  EXPECT_EQ(RequestGate::BearerToken("Bearer abc"), "abc");
  EXPECT_EQ(RequestGate::BearerToken("bearer  abc "), "abc");
  EXPECT_EQ(RequestGate::BearerToken("BEARER abc"), "abc");
  EXPECT_EQ(RequestGate::BearerToken(""), "");
  EXPECT_EQ(RequestGate::BearerToken("Bearer "), "");
  EXPECT_EQ(RequestGate::BearerToken("Bearer    "), "");
  EXPECT_EQ(RequestGate::BearerToken("Basic abc"), "");
  EXPECT_EQ(RequestGate::BearerToken("Bearerabc"), "");
}

TEST(RequestGateTest, TokenRefusalsSayWhatToDo) {
  GateDecision invalid = Gate().RefuseInvalidToken(/*token_sent=*/true);
  EXPECT_EQ(invalid.kind, GateDecision::Kind::kRefuse);
  EXPECT_EQ(invalid.status, 401);
  EXPECT_NE(invalid.message.find("Authorization: Bearer"), std::string::npos);
  EXPECT_NE(invalid.extra_headers.find("WWW-Authenticate: Bearer"), std::string::npos);

  GateDecision locked = RequestGate::RefuseLockedOut(30);
  EXPECT_EQ(locked.status, 429);
  EXPECT_EQ(locked.extra_headers, "Retry-After: 30\r\n");
  // Never "Retry-After: 0", which would invite an immediate retry.
  EXPECT_EQ(RequestGate::RefuseLockedOut(0).extra_headers, "Retry-After: 1\r\n");

  GateDecision unavailable = RequestGate::RefuseAuthUnavailable();
  EXPECT_EQ(unavailable.status, 503);
  EXPECT_NE(unavailable.message.find("not rejected"), std::string::npos);
}

RequestGate SigningInGate() {
  auto resource = ProtectedResource::Make("https://relay.example/mcp", "https://app.example",
                                          "/mcp");
  EXPECT_TRUE(resource.ok()) << resource.status();
  return RequestGate(
      {.mcp_path = "/mcp", .allowed_origins = {}, .allowed_hosts = {}, .resource = *resource});
}

TEST(RequestGateTest, TheMetadataIsServedOnlyWhenAgentsSignIn) {
  RequestHead head = Post("/.well-known/oauth-protected-resource/mcp");
  head.method = "GET";
  head.host = std::nullopt;  // public: no Host check
  EXPECT_EQ(SigningInGate().Decide(head, false).kind, GateDecision::Kind::kMetadata);
  head.target = "/.well-known/oauth-protected-resource";
  EXPECT_EQ(SigningInGate().Decide(head, false).kind, GateDecision::Kind::kMetadata);
  head.target = "/.well-known/oauth-protected-resource/other";
  EXPECT_EQ(SigningInGate().Decide(head, false).status, 404);
  head.target = "/.well-known/openid-configuration";
  EXPECT_EQ(SigningInGate().Decide(head, false).status, 404);
  head.target = "/.well-known/oauth-protected-resource/mcp";
  EXPECT_EQ(Gate().Decide(head, false).status, 404);
}

TEST(RequestGateTest, A401PointsAtTheMetadataWhenAgentsSignIn) {
  GateDecision none = SigningInGate().RefuseInvalidToken(/*token_sent=*/false);
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(none.extra_headers,
            "WWW-Authenticate: Bearer resource_metadata=\"https://relay.example/.well-known/"
            "oauth-protected-resource/mcp\"\r\n");
  GateDecision bad = SigningInGate().RefuseInvalidToken(/*token_sent=*/true);
  EXPECT_NE(bad.extra_headers.find(", error=\"invalid_token\""), std::string::npos);
  EXPECT_NE(bad.message.find("sign in again"), std::string::npos);
}

}  // namespace
}  // namespace relay::gateway
