#pragma once

#include <grpcpp/grpcpp.h>

#include "common/grpc/cq_loop.h"
#include "relay/v1/router.grpc.pb.h"

namespace relay::router {

// The Router service: OpenLink, a gateway's admission, answers where this
// shard's link port is (router/net/gateway_links.h carries the links).
class LinkServer {
 public:
  explicit LinkServer(int link_port) : link_port_(link_port) {}

  // Register before the server is built.
  grpc::Service* service() { return &service_; }
  // After the server started, before the loop does.
  void Serve(common::CqLoop& loop);

 private:
  const int link_port_;
  relay::v1::Router::AsyncService service_;
};

}  // namespace relay::router
