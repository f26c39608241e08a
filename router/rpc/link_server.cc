#include "router/rpc/link_server.h"

#include "common/grpc/async_unary.h"
#include "common/grpc/grpc_tls.h"

namespace relay::router {

void LinkServer::Serve(common::CqLoop& loop) {
  common::ServeUnary(loop, &service_, &relay::v1::Router::AsyncService::RequestOpenLink,
                     common::kRoleGateway, "Router.OpenLink",
                     [this](const relay::v1::OpenLinkRequest&, relay::v1::OpenLinkResponse* response) {
                       response->set_port(static_cast<uint32_t>(link_port_));
                       return grpc::Status::OK;
                     });
}

}  // namespace relay::router
