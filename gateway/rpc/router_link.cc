#include "gateway/rpc/router_link.h"

#include "common/log.h"

namespace relay::gateway {

RouterLink::RouterLink(RouterLinkOwner& owner, relay::v1::Router::Stub& stub,
                       common::CqLoop& loop, const Deferrer& defer)
    : owner_(owner), loop_(loop), defer_(defer) {
  // The link waits for the router instead of failing while it is down, so
  // that it is up again as soon as the channel reconnects (within the
  // channel's 1 s reconnect backoff of a router's restart). Calls do not
  // wait: they fail at once while the link is not up.
  context_.set_wait_for_ready(true);
  stream_ = stub.PrepareAsyncLink(&context_, loop.cq());
}

bool RouterLink::Send(relay::v1::GatewayEvent&& event) {
  size_t bytes = event.ByteSizeLong();
  bool flush = false;
  {
    absl::MutexLock lock(&mu_);
    if (closed_) {
      return false;
    }
    if (!queue_.Push(std::move(event), bytes)) {
      common::LogWarn("router not reading its link; ending it");
      closed_ = true;
      context_.TryCancel();
      return false;
    }
    // A write in flight takes what waits when it completes; otherwise one
    // deferred flush takes everything of this turn.
    if (!queue_.writing() && !flush_pending_) {
      flush_pending_ = true;
      flush = true;
    }
  }
  if (flush) {
    Ref();
    defer_([this] {
      {
        absl::MutexLock lock(&mu_);
        flush_pending_ = false;
        StartWriteLocked();
      }
      Unref();
    });
  }
  return true;
}

bool RouterLink::Flushed() {
  absl::MutexLock lock(&mu_);
  return closed_ || (queue_.empty() && !queue_.writing() && !flush_pending_);
}

void RouterLink::Start() {
  absl::MutexLock lock(&mu_);
  stream_->StartCall(TagFor(Op::kStarted));
  // The router sends its initial metadata at once: the link is up.
  stream_->ReadInitialMetadata(TagFor(Op::kMetadata));
}

void RouterLink::OnCompleted(Op op, bool ok) {
  bool read_more = false;
  switch (op) {
    case Op::kStarted: {
      // The start sent the call's metadata with the stream's write operations:
      // the first write (the hello) may go only now. A failed start fails the
      // reads too.
      {
        absl::MutexLock lock(&mu_);
        started_ = true;
        StartWriteLocked();
        MaybeFinishLocked();  // Finish waits for the start's tag
      }
      return;
    }
    case Op::kMetadata:
      if (ok) {
        owner_.OnLinkEstablished();
      }
      read_more = ok;
      break;
    case Op::kRead:
      if (ok) {
        owner_.OnBatch(in_);
        in_.Clear();
      }
      read_more = ok;
      break;
    case Op::kWritten: {
      absl::MutexLock lock(&mu_);
      queue_.Written();
      if (ok) {
        StartWriteLocked();
      } else {
        closed_ = true;  // the stream is broken; its read side ends it
      }
      MaybeFinishLocked();
      return;
    }
    case Op::kFinished:
      owner_.OnLinkEnded(this, status_);
      Unref();
      return;
  }
  absl::MutexLock lock(&mu_);
  if (read_more && !loop_.stopping()) {
    stream_->Read(&in_, TagFor(Op::kRead));
    return;
  }
  reading_ended_ = true;
  closed_ = true;
  MaybeFinishLocked();
}

void RouterLink::StartWriteLocked() {
  if (closed_ || !started_ || loop_.stopping()) {
    return;
  }
  if (relay::v1::GatewayBatch* batch = queue_.Next()) {
    stream_->Write(*batch, TagFor(Op::kWritten));
  }
}

void RouterLink::MaybeFinishLocked() {
  if (!reading_ended_ || !started_ || finishing_ || queue_.writing() || loop_.stopping()) {
    return;
  }
  finishing_ = true;
  stream_->Finish(&status_, TagFor(Op::kFinished));
}

}  // namespace relay::gateway
