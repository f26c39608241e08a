#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/grpc/grpc_tls.h"

namespace grpc {
class Server;
class ServerCompletionQueue;
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

struct GrpcServerOptions {
  // gRPC's own health service (grpc.health.v1), on gRPC's callback threads.
  bool default_health = true;
  // When set, a completion queue for services of gRPC's async API is made
  // here (for a CqLoop).
  std::unique_ptr<grpc::ServerCompletionQueue>* cq = nullptr;
  // Mutual TLS when enabled; plaintext otherwise.
  const ServiceTls* tls = nullptr;
};

// Server reflection (grpcurl list) for every server this process starts
// (relay_grpc_reflection).
void EnableGrpcReflection();

// Starts a gRPC server (mutual TLS with options.tls) on listen ("host:port"). The services must
// outlive the server.
absl::StatusOr<StartedServer> StartGrpcServer(const std::string& listen,
                                              const std::vector<grpc::Service*>& services,
                                              const GrpcServerOptions& options = {});

}  // namespace relay::common
