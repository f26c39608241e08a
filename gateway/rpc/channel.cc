#include "gateway/rpc/channel.h"

#include <grpcpp/grpcpp.h>

#include "common/grpc/grpc_server.h"

namespace relay::gateway {

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address, const common::ServiceTls& tls) {
  grpc::ChannelArguments args;
  // A dead peer of a long-lived stream is noticed within seconds.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // Reconnect quickly after a restart of the peer.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // A batch on a link may hold a 16 MiB tab message.
  args.SetMaxReceiveMessageSize(common::kMaxGrpcMessageBytes);
  args.SetMaxSendMessageSize(common::kMaxGrpcMessageBytes);
  return grpc::CreateCustomChannel(address, common::ChannelCredentials(tls), args);
}

}  // namespace relay::gateway
