#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace relay::gateway {

// The relay as an OAuth 2.1 protected resource (MCP-SURFACE.md "Authorization"; RFC 9728,
// RFC 8707): its metadata document, the challenge of its 401s, and the audience check of a
// verified token. The relay keeps no state for it: every gateway is configured alike and
// answers alike. Plain C++, immutable once made (shared by every I/O thread).
class ProtectedResource {
 public:
  // Disabled: the relay answers as before the sign-in existed (a bare bearer challenge, no
  // metadata, every verified token accepted).
  ProtectedResource() = default;

  // public_url: the relay's canonical URL as agents reach it (the load balancer's, never a
  // pod's), e.g. "https://relay.example.org/mcp"; authorization_server: the host
  // application's issuer. Both empty: disabled. Otherwise both must be absolute http(s)
  // URLs without query or fragment.
  static absl::StatusOr<ProtectedResource> Make(absl::string_view public_url,
                                                absl::string_view authorization_server,
                                                absl::string_view mcp_path);

  bool enabled() const { return !public_url_.empty(); }

  // The metadata's paths: /.well-known/oauth-protected-resource, and its path-inserted forms
  // for the public URL's path and for the gateway's own MCP path (a proxy may publish the
  // relay under another path than the gateway serves).
  bool IsMetadataPath(absl::string_view path) const;
  // The RFC 9728 document, application/json.
  const std::string& metadata() const { return metadata_; }

  // The WWW-Authenticate header line ("Name: value\r\n") of a 401: the metadata's URL, and
  // error="invalid_token" when the request carried a token (RFC 6750 section 3.1).
  std::string Challenge(bool token_sent) const;

  // RFC 8707: a token issued for another resource is not for us. A token that names none
  // (made in the dialog of a host application that names no relay) is accepted as before.
  bool Accepts(absl::string_view token_resource) const;

  // The URL in canonical form for comparison: scheme and host in lower case, the default
  // port and a trailing slash dropped. Empty for what is not an absolute http(s) URL without
  // query or fragment.
  static std::string Canonical(absl::string_view url);

 private:
  std::string public_url_;      // canonical
  std::string metadata_url_;    // where the metadata is, as agents reach it
  std::string public_path_;     // the public URL's path ("/mcp")
  std::string mcp_path_;        // the gateway's own MCP path
  std::string metadata_;
};

}  // namespace relay::gateway
