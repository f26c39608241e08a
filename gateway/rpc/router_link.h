#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

#include <grpcpp/grpcpp.h>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/batch_queue.h"
#include "common/cq_loop.h"
#include "gateway/rpc/grpc_clients.h"
#include "relay/v1/router.grpc.pb.h"

namespace relay::gateway {

class RouterLink;

// Who holds a RouterLink (a router shard) and hears what it reads. Called on
// the gRPC loop thread.
class RouterLinkOwner {
 public:
  // The router answered the link's start: it is up.
  virtual void OnLinkEstablished() = 0;
  // A batch of the router's commands, in order (may be moved from).
  virtual void OnBatch(relay::v1::RouterBatch& batch) = 0;
  // The link's stream has finished; the link deletes itself once nobody holds it.
  virtual void OnLinkEnded(RouterLink* link, const grpc::Status& status) = 0;

 protected:
  ~RouterLinkOwner() = default;
};

// A batch is cut here so that one large message does not hold up the rest.
inline constexpr size_t kLinkBatchBytes = 1 << 20;
// A router that stops reading: events wait up to this much, then the link ends.
inline constexpr size_t kLinkMaxQueuedBytes = 256 << 20;

// One link to one router shard, driven by the gateway's gRPC thread (a
// common::CqLoop) through the completion-queue API; the I/O threads only queue
// events and start writes. Writes: one in flight; whatever is sent meanwhile
// goes out together as the next batch, so a lone call never waits for a batch
// to fill and a loaded link writes many calls at once. Once its stream has
// finished it tells the shard (which starts another) and, when no operation
// of it is still in flight and nobody holds it, deletes itself.
class RouterLink {
 public:
  RouterLink(RouterLinkOwner& owner, relay::v1::Router::Stub& stub, common::CqLoop& loop,
             const Deferrer& defer);

  // Any thread. False once the link has ended: the event is dropped.
  bool Send(relay::v1::GatewayEvent&& event) ABSL_LOCKS_EXCLUDED(mu_);

  // Starts the stream; events sent before are written once it is started.
  void Start() ABSL_LOCKS_EXCLUDED(mu_);
  void Cancel() { context_.TryCancel(); }
  // Nothing queued, no write waiting to start or in flight.
  bool Flushed() ABSL_LOCKS_EXCLUDED(mu_);

  // The link deletes itself when its stream has finished and nobody else
  // holds it (a deferred flush, or Stop while it cancels it).
  void Ref() { refs_.fetch_add(1); }
  void Unref() {
    if (refs_.fetch_sub(1) == 1) {
      delete this;
    }
  }

 private:
  enum class Op { kStarted, kMetadata, kRead, kWritten, kFinished };
  using OpTag = common::OpTag<RouterLink, Op>;
  friend OpTag;
  common::CqTag* TagFor(Op op) { return &tags_[static_cast<int>(op)]; }

  // On the loop thread.
  void OnCompleted(Op op, bool ok) ABSL_LOCKS_EXCLUDED(mu_);
  void StartWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Finish once the read side has ended and no write is in flight.
  void MaybeFinishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::atomic<int> refs_{1};  // the stream's own, dropped once it finished
  RouterLinkOwner& owner_;
  common::CqLoop& loop_;
  const Deferrer& defer_;
  OpTag tags_[5] = {{this, Op::kStarted}, {this, Op::kMetadata}, {this, Op::kRead},
                    {this, Op::kWritten}, {this, Op::kFinished}};
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientAsyncReaderWriter<relay::v1::GatewayBatch, relay::v1::RouterBatch>>
      stream_;
  relay::v1::RouterBatch in_;  // the loop thread's alone
  grpc::Status status_;       // set by Finish
  absl::Mutex mu_;
  common::BatchQueue<relay::v1::GatewayBatch, relay::v1::GatewayEvent,
                    &relay::v1::GatewayBatch::add_events>
      queue_ ABSL_GUARDED_BY(mu_){kLinkBatchBytes, kLinkMaxQueuedBytes};
  bool started_ ABSL_GUARDED_BY(mu_) = false;  // the start's tag is back
  bool closed_ ABSL_GUARDED_BY(mu_) = false;        // no more writes
  bool reading_ended_ ABSL_GUARDED_BY(mu_) = false;
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;
  bool flush_pending_ ABSL_GUARDED_BY(mu_) = false;
};

// One router shard: its channel, its current link, and the calls waiting for
// an answer on it.

}  // namespace relay::gateway
