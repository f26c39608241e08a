#pragma once

#include <grpcpp/grpcpp.h>

#include "common/grpc/cq_loop.h"
#include "relay/v1/router.grpc.pb.h"
#include "router/rpc/router_hub.h"

namespace relay::router {

// Operators' view and actions (relayctl), answered on the router's CqLoop
// thread like the links (each takes the hub's lock briefly and never blocks).
class RouterAdminService {
 public:
  explicit RouterAdminService(RouterHub& hub) : hub_(hub) {}

  // Register before the server is built.
  grpc::Service* service() { return &service_; }
  // After the server started, before the loop does.
  void Serve(common::CqLoop& loop);

 private:
  // Awaits the next RouterAdmin.Watch call.
  void ServeWatch(common::CqLoop& loop);

  RouterHub& hub_;
  relay::v1::RouterAdmin::AsyncService service_;
};

}  // namespace relay::router
