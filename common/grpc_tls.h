#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace grpc {
class ChannelCredentials;
class ServerContextBase;
class ServerCredentials;
class Status;
}  // namespace grpc

namespace relay::common {

// Mutual TLS between the services (ARCHITECTURE.md, "Between the services"):
// one CA every service trusts, one certificate per service whose common name
// is its role ("gateway", "operator", "router", "authsvc"). Servers require a
// client certificate signed by the CA; each method admits the roles it names.
struct GrpcTls {
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
absl::StatusOr<GrpcTls> GrpcTlsFromFlags();
// Logs loudly that this process's gRPC is plaintext and open to every peer.
void WarnIfPlaintext(const GrpcTls& tls, absl::string_view what);

std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const GrpcTls& tls);
std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials(const GrpcTls& tls);

// The caller's role: the common name of the certificate it presented (which
// the server has verified against the CA); empty over plaintext.
std::string CallerRole(const grpc::ServerContextBase& context);
// Whether the caller may call a method for role: over plaintext always (only a
// server started without TLS, which warned, takes plaintext calls), over TLS
// when its certificate's role is role.
bool CallerIs(const grpc::ServerContextBase& context, absl::string_view role);
// The PERMISSION_DENIED answer for a caller without role.
grpc::Status DeniedUnless(absl::string_view role, absl::string_view method);

}  // namespace relay::common
