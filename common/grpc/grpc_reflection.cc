#include <grpcpp/ext/proto_server_reflection_plugin.h>

#include "common/grpc/grpc_server.h"

namespace relay::common {

void EnableGrpcReflection() { grpc::reflection::InitProtoReflectionServerBuilderPlugin(); }

}  // namespace relay::common
