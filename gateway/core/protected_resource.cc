#include "gateway/core/protected_resource.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"

namespace relay::gateway {

namespace {

constexpr absl::string_view kMetadataPath = "/.well-known/oauth-protected-resource";

struct UrlParts {
  std::string scheme;     // lower case
  std::string authority;  // lower case, default port dropped
  std::string path;       // without a trailing slash ("" for the root)
};

bool Split(absl::string_view url, UrlParts& parts) {
  size_t colon = url.find("://");
  if (colon == absl::string_view::npos || url.find_first_of("?#") != absl::string_view::npos) {
    return false;
  }
  parts.scheme = absl::AsciiStrToLower(url.substr(0, colon));
  if (parts.scheme != "http" && parts.scheme != "https") {
    return false;
  }
  absl::string_view rest = url.substr(colon + 3);
  size_t slash = rest.find('/');
  absl::string_view authority = rest.substr(0, slash);
  // No credentials in a resource's URL, and a host to name.
  if (authority.empty() || absl::StrContains(authority, '@') || authority.front() == ':') {
    return false;
  }
  std::string lower = absl::AsciiStrToLower(authority);
  absl::string_view host_port = lower;
  absl::ConsumeSuffix(&host_port, parts.scheme == "https" ? ":443" : ":80");
  parts.authority = std::string(host_port);
  parts.path = slash == absl::string_view::npos ? "" : std::string(rest.substr(slash));
  while (!parts.path.empty() && parts.path.back() == '/') {
    parts.path.pop_back();
  }
  return true;
}

}  // namespace

std::string ProtectedResource::Canonical(absl::string_view url) {
  UrlParts parts;
  if (!Split(url, parts)) {
    return "";
  }
  return absl::StrCat(parts.scheme, "://", parts.authority, parts.path);
}

absl::StatusOr<ProtectedResource> ProtectedResource::Make(absl::string_view public_url,
                                                          absl::string_view authorization_server,
                                                          absl::string_view mcp_path) {
  ProtectedResource resource;
  if (public_url.empty() && authorization_server.empty()) {
    return resource;
  }
  if (public_url.empty() || authorization_server.empty()) {
    return absl::InvalidArgumentError(
        "--public_url and --authorization_server go together: set both (agents sign in) or "
        "neither (agents send tokens made in the editor)");
  }
  UrlParts parts;
  if (!Split(public_url, parts)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--public_url must be the absolute http(s) URL agents use, without query or fragment "
        "(e.g. https://relay.example.org/mcp); got ",
        public_url));
  }
  if (Canonical(authorization_server).empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--authorization_server must be the host application's issuer, an absolute http(s) "
        "URL (e.g. https://app.example.org); got ",
        authorization_server));
  }
  resource.public_url_ = absl::StrCat(parts.scheme, "://", parts.authority, parts.path);
  resource.public_path_ = parts.path;
  resource.mcp_path_ = std::string(mcp_path);
  resource.metadata_url_ =
      absl::StrCat(parts.scheme, "://", parts.authority, kMetadataPath, parts.path);
  // The issuer as configured, byte for byte: clients compare it with the issuer of the
  // authorization server's own metadata (RFC 8414 section 3.3).
  nlohmann::json document = {
      {"resource", resource.public_url_},
      {"authorization_servers", {std::string(authorization_server)}},
      {"bearer_methods_supported", {"header"}},
      {"resource_name", "Editor tabs (MCP tab relay)"},
  };
  resource.metadata_ = document.dump();
  return resource;
}

bool ProtectedResource::IsMetadataPath(absl::string_view path) const {
  if (!enabled() || !absl::ConsumePrefix(&path, kMetadataPath)) {
    return false;
  }
  return path.empty() || path == public_path_ || path == mcp_path_;
}

std::string ProtectedResource::Challenge(bool token_sent) const {
  return absl::StrCat("WWW-Authenticate: Bearer resource_metadata=\"", metadata_url_, "\"",
                      token_sent ? ", error=\"invalid_token\"" : "", "\r\n");
}

bool ProtectedResource::Accepts(absl::string_view token_resource) const {
  // The host API names the resource as it was asked for, which is almost always the public
  // URL as published: equal bytes need no canonical form (no allocation per request).
  if (!enabled() || token_resource.empty() || token_resource == public_url_) {
    return true;
  }
  return Canonical(token_resource) == public_url_;
}

}  // namespace relay::gateway
