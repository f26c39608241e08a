#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <utility>

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

// The tag of one kind of operation of an owner that has at most one of each
// kind in flight: Proceed calls owner->OnCompleted(op, ok) (which the owner
// may keep private by befriending its OpTag).
template <typename Owner, typename Op>
class OpTag final : public CqTag {
 public:
  OpTag(Owner* owner, Op op) : owner_(owner), op_(op) {}
  void Proceed(bool ok) override { owner_->OnCompleted(op_, ok); }

 private:
  Owner* owner_;
  Op op_;
};

// A tag that runs a function (an alarm's, say: ok false when cancelled).
class CallbackTag final : public CqTag {
 public:
  explicit CallbackTag(std::function<void(bool)> fn) : fn_(std::move(fn)) {}
  void Proceed(bool ok) override { fn_(ok); }

 private:
  std::function<void(bool)> fn_;
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
