#include "router/rpc/link_server.h"

#include <cstdint>
#include <functional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/batch_queue.h"
#include "common/grpc_tls.h"
#include "common/log.h"

namespace relay::router {

using relay::v1::GatewayBatch;
using relay::v1::RouterBatch;
using relay::v1::RouterCommand;

namespace {

// A batch is cut here so that one large answer does not hold up the rest.
constexpr size_t kBatchBytes = 1 << 20;
// A gateway that stops reading its link: its commands wait up to this much,
// then the link ends (the gateway reconnects and re-announces).
constexpr size_t kMaxQueuedBytes = 256 << 20;

// One gateway's link: accepted, then one read and at most one write in flight
// until the gateway goes; then Finish. Owns itself (self_) until every
// operation it started has come back from the completion queue.
//
// Reads, and the writes they cause, run on the link thread. The operators'
// RPCs and the sweeper push commands from their threads too, so the write side
// is under mu_ (uncontended on the hot path: no system call).
class GatewayLink final : public LinkWriter, public std::enable_shared_from_this<GatewayLink> {
 public:
  enum class Op { kAccepted, kMetadataSent, kRead, kWritten, kFinished, kDone };

  // accepted runs on the loop thread once a gateway's call is accepted (the
  // server then awaits the next).
  GatewayLink(RouterHub& hub, relay::v1::Router::AsyncService& service, common::CqLoop& loop,
              std::function<void()> accepted)
      : hub_(hub), loop_(loop), accepted_(std::move(accepted)) {
    context_.AsyncNotifyWhenDone(TagFor(Op::kDone));
    service.RequestLink(&context_, &stream_, loop.server_cq(), loop.server_cq(),
                        TagFor(Op::kAccepted));
  }

  // On the loop thread, when an operation this link started came back.
  void OnCompleted(Op op, bool ok);

  void Push(RouterCommand&& command) override ABSL_LOCKS_EXCLUDED(mu_);
  void Flush() override ABSL_LOCKS_EXCLUDED(mu_);

  // Keeps this link alive until its operations have all come back.
  void Own() { self_ = shared_from_this(); }

 private:
  void Accepted();
  void StartWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Finish once the read has ended and no write is in flight.
  void MaybeFinishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // One tag per kind of operation (at most one of each is in flight).
  using OpTag = common::OpTag<GatewayLink, Op>;
  friend OpTag;
  common::CqTag* TagFor(Op op) { return &tags_[static_cast<int>(op)]; }

  RouterHub& hub_;
  common::CqLoop& loop_;
  std::function<void()> accepted_;
  OpTag tags_[6] = {{this, Op::kAccepted}, {this, Op::kMetadataSent}, {this, Op::kRead},
                    {this, Op::kWritten},  {this, Op::kFinished},     {this, Op::kDone}};
  grpc::ServerContext context_;
  grpc::ServerAsyncReaderWriter<RouterBatch, GatewayBatch> stream_{&context_};
  GatewayBatch in_;  // the link thread's alone
  uint64_t link_id_ = 0;
  std::shared_ptr<GatewayLink> self_;

  absl::Mutex mu_;
  common::BatchQueue<RouterBatch, RouterCommand, &RouterBatch::add_commands> queue_
      ABSL_GUARDED_BY(mu_){kBatchBytes, kMaxQueuedBytes};
  int pending_ ABSL_GUARDED_BY(mu_) = 1;  // the done notification
  bool metadata_sent_ ABSL_GUARDED_BY(mu_) = false;
  bool reading_ended_ ABSL_GUARDED_BY(mu_) = false;
  bool write_failed_ ABSL_GUARDED_BY(mu_) = false;
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
};

void GatewayLink::OnCompleted(Op op, bool ok) {
  if (op == Op::kAccepted) {
    if (!ok) {
      self_.reset();  // the server is stopping; no call was matched
      return;
    }
    if (loop_.stopping()) {
      return;  // a call matched as the process ends: its done tag may still come, so keep this
    }
    accepted_();
    if (!common::CallerIs(context_, common::kRoleGateway)) {
      common::LogWarn("link refused: the caller's certificate is not a gateway's",
                      {{"peer", context_.peer()}, {"role", common::CallerRole(context_)}});
      absl::MutexLock lock(&mu_);
      reading_ended_ = true;
      finishing_ = true;
      stream_.Finish(common::DeniedUnless(common::kRoleGateway, "Router.Link"),
                     TagFor(Op::kFinished));
      ++pending_;
      return;
    }
    Accepted();
    return;
  }
  if (op == Op::kRead && ok) {
    hub_.Handle(link_id_, in_);
    in_.Clear();
  }
  bool ended = false;
  bool release = false;
  {
    absl::MutexLock lock(&mu_);
    --pending_;
    switch (op) {
      case Op::kMetadataSent:
        metadata_sent_ = true;
        StartWriteLocked();
        break;
      case Op::kRead:
        if (ok && !loop_.stopping()) {
          stream_.Read(&in_, TagFor(Op::kRead));
          ++pending_;
        } else {
          // The gateway went, or the call was cancelled: no more commands.
          reading_ended_ = true;
          ended = true;
        }
        break;
      case Op::kWritten:
        queue_.Written();
        if (ok) {
          StartWriteLocked();
        } else {
          write_failed_ = true;  // the stream is broken; the read ends the link
        }
        break;
      case Op::kDone:
        done_ = true;
        break;
      case Op::kFinished:
      case Op::kAccepted:
        break;
    }
    MaybeFinishLocked();
    release = pending_ == 0 && done_;
  }
  if (ended) {
    // Outside our lock: the hub takes its own, then ours.
    hub_.RemoveLink(link_id_);
    common::LogInfo("gateway unlinked", {{"link", link_id_}});
  }
  if (release) {
    self_.reset();  // may delete this
  }
}

void GatewayLink::Accepted() {
  uint64_t id = hub_.AddLink(shared_from_this());
  common::LogInfo("gateway linked", {{"link", id}, {"peer", context_.peer()}});
  absl::MutexLock lock(&mu_);
  // Written under the lock: Push (any thread) reads it there; the loop thread,
  // which alone writes it, reads it anywhere.
  link_id_ = id;
  // Tells the gateway at once that the link is up (its readiness). Counts as
  // the write in flight until it is sent.
  stream_.SendInitialMetadata(TagFor(Op::kMetadataSent));
  stream_.Read(&in_, TagFor(Op::kRead));
  pending_ += 2;
}

void GatewayLink::Push(RouterCommand&& command) {
  size_t bytes = command.ByteSizeLong();
  absl::MutexLock lock(&mu_);
  if (reading_ended_) {
    return;
  }
  if (!queue_.Push(std::move(command), bytes)) {
    // The pending read fails next, which ends the link.
    common::LogWarn("gateway not reading its link; ending it", {{"link", link_id_}});
    context_.TryCancel();
    reading_ended_ = true;
  }
}

void GatewayLink::Flush() {
  absl::MutexLock lock(&mu_);
  StartWriteLocked();
}

void GatewayLink::StartWriteLocked() {
  if (reading_ended_ || write_failed_ || !metadata_sent_ || loop_.stopping()) {
    return;
  }
  if (RouterBatch* batch = queue_.Next()) {
    stream_.Write(*batch, TagFor(Op::kWritten));
    ++pending_;
  }
}

void GatewayLink::MaybeFinishLocked() {
  if (!reading_ended_ || finishing_ || queue_.writing() || !metadata_sent_ || loop_.stopping()) {
    return;
  }
  finishing_ = true;
  stream_.Finish(grpc::Status::OK, TagFor(Op::kFinished));
  ++pending_;
}

}  // namespace

void LinkServer::Serve(common::CqLoop& loop) {
  auto link = std::make_shared<GatewayLink>(hub_, service_, loop, [this, &loop] { Serve(loop); });
  link->Own();
}

}  // namespace relay::router
