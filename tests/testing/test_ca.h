#pragma once

#include <string>

#include "common/service_tls.h"

namespace relay::testing {

// A certificate authority made in memory for a test (P-256, a day's
// validity), issuing certificates as scripts/make-certs.sh does: the common
// name is the role; a server's names 127.0.0.1 and localhost and is for
// serverAuth, a client's is for clientAuth.
class TestCa {
 public:
  enum class Use { kServer, kClient };
  // ca_name: the CA's own common name (two CAs of a test differ by it).
  explicit TestCa(const std::string& ca_name = "test CA");
  ~TestCa();
  TestCa(const TestCa&) = delete;
  TestCa& operator=(const TestCa&) = delete;

  // A certificate for role, its key and this CA: what a service's
  // --grpc_tls_* flags would hold. san: a server's subject alternative names.
  common::ServiceTls Issue(const std::string& role, Use use,
                        const std::string& san = "IP:127.0.0.1,DNS:localhost") const;
  const std::string& ca_pem() const { return ca_pem_; }

 private:
  struct Keys;
  Keys* keys_;
  std::string ca_pem_;
};

}  // namespace relay::testing
