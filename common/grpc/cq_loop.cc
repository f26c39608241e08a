#include "common/grpc/cq_loop.h"

#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>

namespace relay::common {

class CqLoop::StopTag final : public CqTag {
 public:
  explicit StopTag(CqLoop& loop) : loop_(loop) {}
  void Proceed(bool /*ok*/) override {
    loop_.stopping_.store(true);
    loop_.cq_->Shutdown();
  }

 private:
  CqLoop& loop_;
};

CqLoop::CqLoop(std::unique_ptr<grpc::ServerCompletionQueue> cq)
    : server_cq_(cq.get()), stop_tag_(std::make_unique<StopTag>(*this)) {
  cq_ = std::move(cq);
}

CqLoop::CqLoop(std::unique_ptr<grpc::CompletionQueue> cq)
    : cq_(std::move(cq)), stop_tag_(std::make_unique<StopTag>(*this)) {}

CqLoop::~CqLoop() { Stop(); }

void CqLoop::Start() {
  thread_ = std::thread([this] { Run(); });
}

void CqLoop::Run() {
  void* tag = nullptr;
  bool ok = false;
  while (cq_->Next(&tag, &ok)) {
    static_cast<CqTag*>(tag)->Proceed(ok);
  }
}

void CqLoop::Stop() {
  if (!thread_.joinable()) {
    return;
  }
  stop_alarm_ = std::make_unique<grpc::Alarm>();
  stop_alarm_->Set(cq_.get(), gpr_now(GPR_CLOCK_MONOTONIC), static_cast<CqTag*>(stop_tag_.get()));
  thread_.join();
}

}  // namespace relay::common
