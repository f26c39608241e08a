#include "common/grpc/grpc_server.h"

#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"

namespace relay::common {

absl::StatusOr<StartedServer> StartGrpcServer(const std::string& listen,
                                              const std::vector<grpc::Service*>& services,
                                              const GrpcServerOptions& options) {
  // Process-wide switches, read when a builder is made.
  grpc::EnableDefaultHealthCheckService(options.default_health);
  grpc::ServerBuilder builder;
  StartedServer started;
  builder.AddListeningPort(listen, ServerCredentials(options.tls != nullptr ? *options.tls : ServiceTls{}),
                           &started.port);
  // Gateways hold their streams for hours; keepalive pings find dead peers
  // (a killed gateway's link) within seconds instead of TCP's minutes.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  // The links carry whatever the edges accept (a 16 MiB tab message, a 4 MiB
  // agent body) inside a batch: gRPC's 4 MiB default would end a whole link
  // for one large answer.
  builder.SetMaxReceiveMessageSize(kMaxGrpcMessageBytes);
  builder.SetMaxSendMessageSize(kMaxGrpcMessageBytes);
  for (grpc::Service* service : services) {
    builder.RegisterService(service);
  }
  if (options.cq != nullptr) {
    *options.cq = builder.AddCompletionQueue();
  }
  started.server = builder.BuildAndStart();
  if (started.server == nullptr || started.port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", listen));
  }
  return started;
}

}  // namespace relay::common
