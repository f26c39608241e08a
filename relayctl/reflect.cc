#include "relayctl/reflect.h"

#include <chrono>
#include <cstdio>
#include <string>

#include <grpcpp/grpcpp.h>

#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"

namespace relay::relayctl {

int Reflect(const std::shared_ptr<grpc::Channel>& channel) {
  using grpc::reflection::v1alpha::ServerReflection;
  using grpc::reflection::v1alpha::ServerReflectionRequest;
  using grpc::reflection::v1alpha::ServerReflectionResponse;
  auto stub = ServerReflection::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  auto stream = stub->ServerReflectionInfo(&context);
  ServerReflectionRequest request;
  request.set_list_services("*");
  ServerReflectionResponse response;
  const bool answered = stream->Write(request) && stream->WritesDone() && stream->Read(&response);
  grpc::Status status = stream->Finish();
  if (!answered || !status.ok()) {
    std::fprintf(stderr, "relayctl: no reflection answer: %s\n",
                 status.ok() ? "the stream ended" : status.error_message().c_str());
    return 1;
  }
  if (response.has_error_response()) {
    std::fprintf(stderr, "relayctl: reflection refused: %s\n",
                 response.error_response().error_message().c_str());
    return 1;
  }
  for (const auto& service : response.list_services_response().service()) {
    std::printf("%s\n", service.name().c_str());
  }
  return 0;
}

}  // namespace relay::relayctl
