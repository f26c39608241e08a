#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gateway/auth_client.h"
#include "gateway/router_client.h"

namespace relay::gateway {

// The gRPC implementations of the gateway's two clients. Each keeps one
// long-lived channel per peer for the life of the process.
std::unique_ptr<AuthClient> NewGrpcAuthClient(const std::string& address);

// Links to every shard at once and keeps relinking (with jittered backoff)
// whenever a link ends. sink receives the routers' commands; it must outlive
// the client.
std::unique_ptr<RouterClient> NewGrpcRouterClient(const std::vector<std::string>& shards,
                                                  std::string gateway_id, TabCommandSink& sink);

}  // namespace relay::gateway
