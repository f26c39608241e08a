#include "absl/strings/string_view.h"
#include "gateway/gateway_state.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace relay::gateway {

bool GatewayState::IsAllowedOrigin(absl::string_view origin) const {
  for (const std::string& allowed : options.allowed_origins) {
    if (allowed == origin) {
      return true;
    }
  }
  return false;
}

bool GatewayState::IsAllowedHost(absl::string_view host) const {
  // Strip the port: "[::1]:8080" -> "[::1]", "example.org:443" -> "example.org".
  absl::string_view name = host;
  if (absl::StartsWith(name, "[")) {
    size_t end = name.find(']');
    name = end == absl::string_view::npos ? name : name.substr(0, end + 1);
  } else if (size_t colon = name.rfind(':'); colon != absl::string_view::npos) {
    name = name.substr(0, colon);
  }
  std::string lower = absl::AsciiStrToLower(name);
  if (lower == "localhost" || lower == "[::1]" || absl::StartsWith(lower, "127.")) {
    return true;
  }
  for (const std::string& allowed : options.allowed_hosts) {
    if (absl::AsciiStrToLower(allowed) == lower) {
      return true;
    }
  }
  return false;
}

}  // namespace relay::gateway
