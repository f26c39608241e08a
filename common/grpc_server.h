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

// The largest gRPC message a service sends or takes: a batch on a link may
// hold a 16 MiB tab message (plus framing) and batches are cut at 1 MiB.
inline constexpr int kMaxGrpcMessageBytes = 64 * 1024 * 1024;

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
