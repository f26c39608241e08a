#pragma once

#include <memory>

#include <grpcpp/channel.h>

namespace relay::relayctl {

// `relayctl reflect ADDRESS`: the services a gRPC server lists through server reflection
// (grpc.reflection.v1alpha), one a line, as any generic gRPC tool would ask. 0 when it
// answered, 1 when not.
int Reflect(const std::shared_ptr<grpc::Channel>& channel);

}  // namespace relay::relayctl
