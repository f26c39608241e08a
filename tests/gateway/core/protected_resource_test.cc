#include "gateway/core/protected_resource.h"

#include <gtest/gtest.h>

#include "nlohmann/json.hpp"

namespace relay::gateway {
namespace {

ProtectedResource Make(absl::string_view public_url, absl::string_view mcp_path = "/mcp") {
  auto resource = ProtectedResource::Make(public_url, "https://app.example", mcp_path);
  EXPECT_TRUE(resource.ok()) << resource.status();
  return resource.ok() ? *resource : ProtectedResource();
}

TEST(ProtectedResourceTest, DisabledUnlessBothAreSet) {
  auto none = ProtectedResource::Make("", "", "/mcp");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->enabled());
  EXPECT_TRUE(none->Accepts("https://elsewhere.example/mcp"));
  EXPECT_FALSE(none->IsMetadataPath("/.well-known/oauth-protected-resource"));
  // Half a configuration is a mistake the operator hears of at start.
  EXPECT_FALSE(ProtectedResource::Make("https://relay.example/mcp", "", "/mcp").ok());
  EXPECT_FALSE(ProtectedResource::Make("", "https://app.example", "/mcp").ok());
}

TEST(ProtectedResourceTest, RefusesUrlsThatAreNotAResourcesName) {
  for (absl::string_view bad : {"relay.example/mcp", "ftp://relay.example/mcp",
                                "https://relay.example/mcp?x=1", "https://relay.example/mcp#f",
                                "https://user@relay.example/mcp", "https:///mcp"}) {
    EXPECT_FALSE(ProtectedResource::Make(bad, "https://app.example", "/mcp").ok()) << bad;
  }
  EXPECT_FALSE(ProtectedResource::Make("https://relay.example/mcp", "app.example", "/mcp").ok());
}

TEST(ProtectedResourceTest, TheMetadataNamesThePublicUrlAndTheIssuer) {
  ProtectedResource resource = Make("HTTPS://Relay.Example:443/mcp/");
  auto document = nlohmann::json::parse(resource.metadata());
  EXPECT_EQ(document["resource"], "https://relay.example/mcp");
  EXPECT_EQ(document["authorization_servers"], nlohmann::json::array({"https://app.example"}));
  EXPECT_EQ(document["bearer_methods_supported"], nlohmann::json::array({"header"}));
  EXPECT_TRUE(document["resource_name"].is_string());
}

TEST(ProtectedResourceTest, ServesTheRootAndThePathInsertedForms) {
  // Published under /relay/mcp by a proxy that passes it on to the gateway's /mcp.
  ProtectedResource resource = Make("https://relay.example/relay/mcp", "/mcp");
  EXPECT_TRUE(resource.IsMetadataPath("/.well-known/oauth-protected-resource"));
  EXPECT_TRUE(resource.IsMetadataPath("/.well-known/oauth-protected-resource/relay/mcp"));
  EXPECT_TRUE(resource.IsMetadataPath("/.well-known/oauth-protected-resource/mcp"));
  EXPECT_FALSE(resource.IsMetadataPath("/.well-known/oauth-protected-resource/"));
  EXPECT_FALSE(resource.IsMetadataPath("/.well-known/oauth-protected-resource/mcpx"));
  EXPECT_FALSE(resource.IsMetadataPath("/.well-known/oauth-authorization-server"));
  EXPECT_EQ(resource.Challenge(false),
            "WWW-Authenticate: Bearer resource_metadata=\"https://relay.example/.well-known/"
            "oauth-protected-resource/relay/mcp\"\r\n");
  EXPECT_EQ(resource.Challenge(true),
            "WWW-Authenticate: Bearer resource_metadata=\"https://relay.example/.well-known/"
            "oauth-protected-resource/relay/mcp\", error=\"invalid_token\"\r\n");
}

TEST(ProtectedResourceTest, AcceptsTokensForItselfOrForNoOneInParticular) {
  ProtectedResource resource = Make("https://relay.example/mcp");
  EXPECT_TRUE(resource.Accepts(""));  // a dialog token of a host naming no relay
  EXPECT_TRUE(resource.Accepts("https://relay.example/mcp"));
  EXPECT_TRUE(resource.Accepts("https://RELAY.example:443/mcp/"));
  EXPECT_FALSE(resource.Accepts("https://other.example/mcp"));
  EXPECT_FALSE(resource.Accepts("https://relay.example/other"));
  EXPECT_FALSE(resource.Accepts("http://relay.example/mcp"));
  EXPECT_FALSE(resource.Accepts("https://relay.example:8443/mcp"));
  EXPECT_FALSE(resource.Accepts("not a url"));
}

}  // namespace
}  // namespace relay::gateway
