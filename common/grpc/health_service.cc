#include "common/grpc/health_service.h"

#include <algorithm>

#include "common/grpc/async_unary.h"

namespace relay::common {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

void HealthService::Serve(CqLoop& loop) {
  ServeUnary(loop, &service_, &grpc::health::v1::Health::AsyncService::RequestCheck, /*role=*/"", "Health.Check",
             [this](const HealthCheckRequest& request, HealthCheckResponse* response) {
               if (!request.service().empty() &&
                   std::find(services_.begin(), services_.end(), request.service()) ==
                       services_.end()) {
                 return grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown service");
               }
               response->set_status(HealthCheckResponse::SERVING);
               return grpc::Status::OK;
             });
}

}  // namespace relay::common
