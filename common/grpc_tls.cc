#include "common/grpc_tls.h"

#include <grpc/grpc_security_constants.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/secret_file.h"

ABSL_FLAG(std::string, grpc_tls_ca, "",
          "PEM file of the CA that signs every service's certificate; with --grpc_tls_cert "
          "and --grpc_tls_key, gRPC between the services is mutual TLS");
ABSL_FLAG(std::string, grpc_tls_cert, "",
          "PEM certificate of this process; its common name is its role (gateway, operator, "
          "router, authsvc)");
ABSL_FLAG(std::string, grpc_tls_key, "",
          "PEM private key of --grpc_tls_cert, readable by its owner only (chmod 600)");

namespace relay::common {

namespace {

absl::StatusOr<std::string> ReadPem(const std::string& flag, const std::string& path,
                                    bool private_key) {
  absl::StatusOr<std::string> content = ReadFileChecked(path, private_key);
  if (!content.ok()) {
    return absl::Status(content.status().code(),
                        absl::StrCat("--", flag, ": ", content.status().message()));
  }
  if (content->find("-----BEGIN") == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", path, " is not PEM"));
  }
  return content;
}

}  // namespace

absl::StatusOr<GrpcTls> GrpcTlsFromFlags() {
  std::string ca = absl::GetFlag(FLAGS_grpc_tls_ca);
  std::string cert = absl::GetFlag(FLAGS_grpc_tls_cert);
  std::string key = absl::GetFlag(FLAGS_grpc_tls_key);
  GrpcTls tls;
  if (ca.empty() && cert.empty() && key.empty()) {
    return tls;
  }
  if (ca.empty() || cert.empty() || key.empty()) {
    return absl::InvalidArgumentError(
        "mutual TLS needs all of --grpc_tls_ca, --grpc_tls_cert and --grpc_tls_key");
  }
  auto ca_pem = ReadPem("grpc_tls_ca", ca, false);
  if (!ca_pem.ok()) return ca_pem.status();
  auto cert_pem = ReadPem("grpc_tls_cert", cert, false);
  if (!cert_pem.ok()) return cert_pem.status();
  auto key_pem = ReadPem("grpc_tls_key", key, true);
  if (!key_pem.ok()) return key_pem.status();
  tls.ca_pem = *std::move(ca_pem);
  tls.cert_pem = *std::move(cert_pem);
  tls.key_pem = *std::move(key_pem);
  return tls;
}

void WarnIfPlaintext(const GrpcTls& tls, absl::string_view what) {
  if (!tls.enabled()) {
    LogWarn(absl::StrCat("gRPC without TLS: ", what,
                         " is open to anyone who can reach it; set --grpc_tls_ca, "
                         "--grpc_tls_cert and --grpc_tls_key"));
  }
}

std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const GrpcTls& tls) {
  if (!tls.enabled()) {
    return grpc::InsecureServerCredentials();
  }
  grpc::SslServerCredentialsOptions options(
      GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = tls.ca_pem;
  options.pem_key_cert_pairs.push_back({tls.key_pem, tls.cert_pem});
  return grpc::SslServerCredentials(options);
}

std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials(const GrpcTls& tls) {
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
