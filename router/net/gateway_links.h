#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/grpc/grpc_tls.h"
#include "router/rpc/router_hub.h"

namespace relay::common {
class LinkListener;
}  // namespace relay::common

namespace relay::router {

// The gateways' links (docs/protocols.md): a TCP port, under the services'
// mutual TLS, on which each gateway holds one connection to this shard. Every
// link runs on one thread of its own: a frame read goes to the hub, and the
// commands it causes are written, batched, from that same thread. Over TLS a
// client whose certificate is not a gateway's is refused.
class GatewayLinks {
 public:
  // listen: host:port (port 0: any).
  static absl::StatusOr<std::unique_ptr<GatewayLinks>> Start(const std::string& listen,
                                                             const common::ServiceTls& tls,
                                                             RouterHub& hub);
  ~GatewayLinks();

  int port() const;
  // Stops accepting and the links' thread.
  void Stop();

 private:
  explicit GatewayLinks(std::unique_ptr<common::LinkListener> listener);
  std::unique_ptr<common::LinkListener> listener_;
};

}  // namespace relay::router
