#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/service_tls.h"

namespace grpc {
class ChannelCredentials;
class ServerContextBase;
class ServerCredentials;
class Status;
}  // namespace grpc

namespace relay::common {

// The gRPC side of the services' mutual TLS (common/service_tls.h): the
// credentials of servers and channels, and the caller's role.
std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const ServiceTls& tls);
std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials(const ServiceTls& tls);

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
