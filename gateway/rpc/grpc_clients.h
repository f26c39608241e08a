#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/grpc_tls.h"
#include "gateway/rpc/auth_client.h"
#include "gateway/rpc/router_client.h"

namespace relay::common {
class CqLoop;
}  // namespace relay::common

namespace relay::gateway {

// The gRPC implementations of the gateway's two clients. Each keeps one
// long-lived channel per peer for the life of the process. Both run every gRPC
// completion on loop's one thread (no other thread of the gateway waits on
// gRPC, so none polls the links' sockets but that one); callbacks and sinks
// are called there and must only post to the I/O threads. The loop must run
// until the clients are destroyed.
std::unique_ptr<AuthClient> NewGrpcAuthClient(const std::string& address, const common::GrpcTls& tls,
                                              common::CqLoop& loop);

// Runs fn soon, after what is ready now, on the calling I/O thread (on the
// first I/O thread when called from elsewhere).
using Deferrer = std::function<void(std::function<void()> fn)>;

// Links to every shard at once and keeps relinking (with jittered backoff)
// whenever a link ends. sink receives the routers' commands; it must outlive
// the client. A link's write starts through defer: every event that the I/O
// threads produce in the same turn (the requests of one epoll round) goes out
// in one batch, and a lone event waits for nothing but that turn.
std::unique_ptr<RouterClient> NewGrpcRouterClient(const std::vector<std::string>& shards,
                                                  const common::GrpcTls& tls,
                                                  std::string gateway_id, RouterCommandSink& sink,
                                                  common::CqLoop& loop, Deferrer defer);

}  // namespace relay::gateway
