#pragma once

#include <memory>
#include <string>

#include "common/grpc/grpc_tls.h"

namespace grpc {
class Channel;
}  // namespace grpc

namespace relay::gateway {

// A channel to one of the gateway's gRPC peers, kept for the life of the
// process: keepalive pings, quick reconnects, and the message size the links
// need; mutual TLS when tls is enabled.
std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address, const common::ServiceTls& tls);

}  // namespace relay::gateway
