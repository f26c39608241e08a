#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/grpc/grpc_tls.h"
#include "gateway/core/router_client.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace relay::common {
class CqLoop;
}  // namespace relay::common

namespace relay::gateway {

// The router client: one link to every shard at once (docs/protocols.md),
// relinked with jittered backoff whenever it ends. Each shard admits the
// gateway over gRPC first (Router.OpenLink, on loop's thread); the links run
// on io (the gateway's first I/O thread), where their reads are handed to the
// sink, which must outlive the client. Events sent during one turn of that
// thread go out in one write; a lone event waits for nothing but that turn.
absl::StatusOr<std::unique_ptr<RouterClient>> NewLinkRouterClient(
    const std::vector<std::string>& shards, const common::ServiceTls& tls, std::string gateway_id,
    RouterCommandSink& sink, common::CqLoop& loop, boost::asio::io_context& io);

}  // namespace relay::gateway
