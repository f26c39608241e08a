#include "common/grpc/grpc_tls.h"

#include <grpc/grpc_security_constants.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>

#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace relay::common {

std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const ServiceTls& tls) {
  if (!tls.enabled()) {
    return grpc::InsecureServerCredentials();
  }
  grpc::SslServerCredentialsOptions options(
      GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = tls.ca_pem;
  options.pem_key_cert_pairs.push_back({tls.key_pem, tls.cert_pem});
  return grpc::SslServerCredentials(options);
}

std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials(const ServiceTls& tls) {
  if (!tls.enabled()) {
    return grpc::InsecureChannelCredentials();
  }
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = tls.ca_pem;
  options.pem_private_key = tls.key_pem;
  options.pem_cert_chain = tls.cert_pem;
  return grpc::SslCredentials(options);
}

std::string CallerRole(const grpc::ServerContextBase& context) {
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth == nullptr || !auth->IsPeerAuthenticated()) {
    return "";
  }
  std::vector<grpc::string_ref> names = auth->FindPropertyValues("x509_common_name");
  return names.empty() ? "" : std::string(names.front().data(), names.front().size());
}

bool CallerIs(const grpc::ServerContextBase& context, absl::string_view role) {
  // Decided per call from its own transport, not from how the process was
  // started: a call over plaintext can only reach a server that serves
  // plaintext (which warned at start); any other transport needs the role.
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth != nullptr) {
    std::vector<grpc::string_ref> type =
        auth->FindPropertyValues(GRPC_TRANSPORT_SECURITY_TYPE_PROPERTY_NAME);
    if (type.size() == 1 && type.front() == "insecure") {
      return true;
    }
  }
  return CallerRole(context) == role;
}

grpc::Status DeniedUnless(absl::string_view role, absl::string_view method) {
  return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                      absl::StrCat(method, " is for the ", role,
                                   " role: call it with a certificate whose common name is ",
                                   role));
}

}  // namespace relay::common
