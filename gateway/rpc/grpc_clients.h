#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/grpc/grpc_tls.h"
#include "gateway/core/auth_client.h"

namespace relay::common {
class CqLoop;
}  // namespace relay::common

namespace relay::gateway {

// The gRPC implementation of the gateway's auth client. It keeps one
// long-lived channel for the life of the process and runs every gRPC
// completion on loop's one thread; callbacks are called there and must only
// post to the I/O threads. The loop must run until the client is destroyed.
// on_revoked hears every revocation, after the memo has dropped its verdicts.
std::unique_ptr<AuthClient> NewGrpcAuthClient(const std::string& address, const common::ServiceTls& tls,
                                              common::CqLoop& loop,
                                              RevocationListener on_revoked = {});

}  // namespace relay::gateway
