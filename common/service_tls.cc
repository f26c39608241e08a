#include "common/service_tls.h"

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

absl::StatusOr<ServiceTls> ServiceTlsFromFlags() {
  std::string ca = absl::GetFlag(FLAGS_grpc_tls_ca);
  std::string cert = absl::GetFlag(FLAGS_grpc_tls_cert);
  std::string key = absl::GetFlag(FLAGS_grpc_tls_key);
  ServiceTls tls;
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

void WarnIfPlaintext(const ServiceTls& tls, absl::string_view what) {
  if (!tls.enabled()) {
    LogWarn(absl::StrCat("gRPC without TLS: ", what,
                         " is open to anyone who can reach it; set --grpc_tls_ca, "
                         "--grpc_tls_cert and --grpc_tls_key"));
  }
}

}  // namespace relay::common
