#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace relay::common {

// Mutual TLS between the services (ARCHITECTURE.md, "Between the services"),
// for their gRPC (common/grpc/grpc_tls.h) and their links
// (common/link/link_tls.h) alike: one CA every service trusts, one
// certificate per service whose common name is its role ("gateway",
// "operator", "router", "authsvc"). Servers require a client certificate
// signed by the CA; each method, and each end of a link, admits the roles it
// names.
struct ServiceTls {
  std::string ca_pem;
  std::string cert_pem;
  std::string key_pem;
  bool enabled() const { return !ca_pem.empty(); }
};

// The role names.
inline constexpr absl::string_view kRoleGateway = "gateway";
inline constexpr absl::string_view kRoleOperator = "operator";
inline constexpr absl::string_view kRoleRouter = "router";

// From --grpc_tls_ca, --grpc_tls_cert and --grpc_tls_key: all three, or none
// (plaintext, with a warning from WarnIfPlaintext). The key file must be
// readable by its owner only.
absl::StatusOr<ServiceTls> ServiceTlsFromFlags();
// Logs loudly that this process's gRPC is plaintext and open to every peer.
void WarnIfPlaintext(const ServiceTls& tls, absl::string_view what);

}  // namespace relay::common
