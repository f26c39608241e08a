#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace grpc {
class Server;
class Service;
}  // namespace grpc

namespace relay::common {

struct StartedServer {
  std::unique_ptr<grpc::Server> server;
  int port = 0;  // the real port, also when 0 was asked for
};

// Starts an insecure gRPC server on listen ("host:port") with the standard
// health service and server reflection switched on, so generic gRPC tools can
// inspect it. The services must outlive the server.
absl::StatusOr<StartedServer> StartGrpcServer(const std::string& listen,
                                              const std::vector<grpc::Service*>& services);

}  // namespace relay::common
