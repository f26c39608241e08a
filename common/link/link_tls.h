#pragma once

#include <openssl/types.h>

#include <memory>

#include "absl/status/statusor.h"
#include "common/service_tls.h"

namespace relay::common {

// The TLS of one side of the links (ARCHITECTURE.md, "Between the services"):
// the same CA, certificate and key as the process's gRPC; a server requires a
// client certificate the CA signed, a client checks the server's certificate
// against the host it dialled. TLS 1.3 only: both ends are ours.
class LinkTls {
 public:
  enum class Side { kServer, kClient };
  // Null when tls is not enabled (the links are plaintext, as gRPC is).
  static absl::StatusOr<std::shared_ptr<LinkTls>> Make(const ServiceTls& tls, Side side);
  ~LinkTls();
  LinkTls(const LinkTls&) = delete;
  LinkTls& operator=(const LinkTls&) = delete;

  Side side() const { return side_; }
  SSL_CTX* context() const { return context_; }

 private:
  LinkTls(SSL_CTX* context, Side side) : context_(context), side_(side) {}
  SSL_CTX* context_;
  Side side_;
};

}  // namespace relay::common
