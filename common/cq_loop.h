#pragma once

#include <atomic>
#include <memory>
#include <thread>

namespace grpc {
class Alarm;
class CompletionQueue;
class ServerCompletionQueue;
}  // namespace grpc

namespace relay::common {

// What a completion-queue tag does when its operation comes back. Every tag
// put on a CqLoop's queue is one of these.
class CqTag {
 public:
  virtual void Proceed(bool ok) = 0;

 protected:
  ~CqTag() = default;
};

// One thread that drives a gRPC completion queue: it polls the sockets itself
// and runs every completion (CqTag::Proceed) in turn, so a read, what it
// causes and the writes that follow happen on that thread without waking
// another. (gRPC's callback API runs reactions on its own "nexting" threads,
// which also poll: each batch then costs a thread hand-off, a futex on this
// kind of machine.)
class CqLoop {
 public:
  // A server's queue (from GrpcServerOptions::cq), or a client's.
  explicit CqLoop(std::unique_ptr<grpc::ServerCompletionQueue> cq);
  explicit CqLoop(std::unique_ptr<grpc::CompletionQueue> cq);
  ~CqLoop();
  CqLoop(const CqLoop&) = delete;
  CqLoop& operator=(const CqLoop&) = delete;

  // Null for a client's queue.
  grpc::ServerCompletionQueue* server_cq() const { return server_cq_; }
  grpc::CompletionQueue* cq() const { return cq_.get(); }
  // True once the queue is shutting down; then no operation may start on it
  // (those in flight still come back). Read it on the loop thread.
  bool stopping() const { return stopping_.load(std::memory_order_relaxed); }

  void Start();
  // Wakes the loop thread, which shuts the queue down itself (so that no
  // operation starts after), drains it and ends; joins it. Idempotent.
  void Stop();

 private:
  class StopTag;
  void Run();

  std::unique_ptr<grpc::CompletionQueue> cq_;
  grpc::ServerCompletionQueue* server_cq_ = nullptr;
  std::unique_ptr<grpc::Alarm> stop_alarm_;
  std::unique_ptr<StopTag> stop_tag_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace relay::common
