#pragma once

#include <functional>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/strings/string_view.h"
#include "common/grpc/cq_loop.h"
#include "common/grpc/grpc_tls.h"

namespace relay::common {

// Serves one unary method of a gRPC async service on a CqLoop: one call waits
// to be accepted at a time; each accepted call is answered at once by
// handler(request, &response) on the loop thread (so a handler must not
// block), and the next one is awaited. A caller without role (see
// grpc_tls.h; empty: anyone) is answered PERMISSION_DENIED.
//
//   ServeUnary(loop, &service, &Svc::AsyncService::RequestGetStats, kRoleOperator,
//              "RouterAdmin.GetStats", [&](const GetStatsRequest& request, GetStatsResponse* response) { ... });
template <typename Service, typename Base, typename Request, typename Response, typename Handler>
void ServeUnary(CqLoop& loop, Service* service,
                void (Base::*request)(grpc::ServerContext*, Request*,
                                      grpc::ServerAsyncResponseWriter<Response>*,
                                      grpc::CompletionQueue*, grpc::ServerCompletionQueue*, void*),
                absl::string_view role, absl::string_view name, Handler handler) {
  struct Method {
    CqLoop& loop;
    Service* service;
    decltype(request) request_call;
    std::string role;
    std::string name;  // for the denial
    std::function<grpc::Status(const Request&, Response*)> handler;
  };
  class Call final : public CqTag {
   public:
    explicit Call(std::shared_ptr<const Method> method) : method_(std::move(method)) {
      grpc::ServerCompletionQueue* cq = method_->loop.server_cq();
      (method_->service->*(method_->request_call))(&context_, &request_, &writer_, cq, cq,
                                                   static_cast<CqTag*>(this));
    }
    void Proceed(bool ok) override {
      if (answered_ || !ok || method_->loop.stopping()) {
        delete this;  // answered, or the server is stopping
        return;
      }
      new Call(method_);  // the next caller
      Response response;
      grpc::Status status = method_->role.empty() || CallerIs(context_, method_->role)
                                ? method_->handler(request_, &response)
                                : DeniedUnless(method_->role, method_->name);
      answered_ = true;
      writer_.Finish(response, status, static_cast<CqTag*>(this));
    }

   private:
    std::shared_ptr<const Method> method_;
    grpc::ServerContext context_;
    Request request_;
    grpc::ServerAsyncResponseWriter<Response> writer_{&context_};
    bool answered_ = false;
  };
  new Call(std::make_shared<const Method>(
      Method{loop, service, request, std::string(role), std::string(name), std::move(handler)}));
}

}  // namespace relay::common
