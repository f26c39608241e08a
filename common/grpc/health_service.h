#pragma once

#include <string>
#include <vector>

#include "grpc/health/v1/health.grpc.pb.h"

namespace relay::common {

class CqLoop;

// grpc.health.v1.Health/Check on a CqLoop, for a server whose every service
// is driven by that loop's one thread (gRPC's default health service runs on
// its callback threads, which would poll the links' sockets too). SERVING for
// "" and for the named services; NOT_FOUND for any other name, as the protocol
// asks.
class HealthService {
 public:
  explicit HealthService(std::vector<std::string> services) : services_(std::move(services)) {}

  grpc::Service* service() { return &service_; }
  void Serve(CqLoop& loop);

 private:
  grpc::health::v1::Health::AsyncService service_;
  std::vector<std::string> services_;
};

}  // namespace relay::common
