#pragma once

#include <grpcpp/grpcpp.h>

#include "common/cq_loop.h"
#include "relay/v1/router.grpc.pb.h"
#include "router/rpc/router_hub.h"

namespace relay::router {

// The Router service's Link streams, one per gateway, all driven by the
// router's one CqLoop thread: a batch read goes to the hub and the commands it
// causes are written from that same thread. (On gRPC's callback API each
// reaction ran on its executor threads, which also polled the sockets: a
// thread hand-off, and a futex, per batch.)
class LinkServer {
 public:
  explicit LinkServer(RouterHub& hub) : hub_(hub) {}

  // Register before the server is built.
  grpc::Service* service() { return &service_; }
  // After the server started, before the loop does: awaits links on it.
  void Serve(common::CqLoop& loop);

 private:
  RouterHub& hub_;
  relay::v1::Router::AsyncService service_;
};

}  // namespace relay::router
