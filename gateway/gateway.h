#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/grpc/grpc_tls.h"
#include "gateway/core/request_gate.h"
#include "gateway/net/gateway_state.h"
#include "gateway/core/mcp_dispatcher.h"

namespace relay::gateway {

// Everything a gateway is built from (main fills it from the flags).
struct GatewayConfig {
  std::string listen = "0.0.0.0:8080";
  std::vector<std::string> routers;
  std::string authsvc;
  common::ServiceTls grpc_tls;  // to the routers and authsvc
  std::string session_secret;
  std::string catalogue_path;
  std::vector<std::string> trusted_proxies;  // CIDRs
  RequestGateOptions gate;
  GatewayOptions options;
  DispatchOptions dispatch;
  int threads = 1;
  absl::Duration drain_timeout = absl::Seconds(10);
  absl::Duration catalogue_poll = absl::Seconds(1);
  // Before it listens, how long a starting gateway waits for its links to every router shard.
  absl::Duration start_link_wait = absl::Seconds(5);
};

// The gateway: builds its parts (the dispatcher, the gRPC clients on their
// loop, the registries, the listener, the catalogue watch), runs them on its
// I/O threads, and drains on the way out.
class Gateway {
 public:
  // Builds and starts everything; the error says what is missing (a secret,
  // the catalogue, an address).
  static absl::StatusOr<std::unique_ptr<Gateway>> Start(GatewayConfig config);
  ~Gateway();

  int port() const;
  const std::string& id() const;

  // SIGTERM (STYLE.md): stop accepting; new requests and tabs get 503; each
  // tab answers the calls it has and is closed with 1001 once it has none;
  // the calls of this gateway's agents finish up to drain_timeout, when those
  // left get a clear error; then the rest is closed (the process may leave;
  // destroying the Gateway stops its threads). Returns whether everything in
  // flight finished in time.
  bool Drain();

 private:
  class Parts;
  explicit Gateway(std::unique_ptr<Parts> parts);
  std::unique_ptr<Parts> parts_;
};

}  // namespace relay::gateway
