#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/batch_queue.h"
#include "common/link/link_channel.h"
#include "common/link/link_frame.h"
#include "common/link/link_frame_parser.h"
#include "common/log.h"

namespace relay::common {

// A write takes batches up to this much; a batch is cut there too, so that one
// large message does not hold up the rest.
inline constexpr size_t kLinkBatchBytes = 1 << 20;
// Past this much waiting for a peer (a router that reads slowly because a
// gateway is backed up, a gateway that reads slowly), the peer is behind
// until its queue is under the low watermark again. No limit ends a link,
// which every account on it shares: a peer that stops reading altogether is
// found hung by the link's liveness.
inline constexpr size_t kLinkHighWatermark = 64 << 20;
inline constexpr size_t kLinkLowWatermark = 16 << 20;

// One end of a link as both services use it (docs/protocols.md): the
// gateway's side of a router shard's link (InBatch = RouterBatch, OutItem =
// GatewayEvent) and the router's side of a gateway's (InBatch = GatewayBatch,
// OutItem = RouterCommand). It checks the peer's role, admits the link (the
// server writes an empty first frame; the client waits for it), parses each
// frame as one InBatch, and batches what any thread queues into the channel's
// write rounds. Each frame it writes is a batch whose field 1 repeats OutItem
// (GatewayBatch.events, RouterBatch.commands).
//
// Any thread enqueues; an item is serialised into its batch's bytes under a
// lock held only for that or to take a batch (no system call under it), and
// the channel's next write round takes what is there: a lone item waits for
// nothing but that turn, and a loaded link writes many at once.
template <typename InBatch, typename OutItem>
class LinkEndpoint : public LinkChannel {
 public:
  struct Options {
    // Under TLS, the common name the peer's certificate must carry.
    std::string peer_role;
    // The router's side: it admits a link by writing an empty first frame
    // once OnAdmitted agreed. The gateway's side waits for that frame.
    bool server = false;
  };
  // Whether an item may wait behind a peer that is behind.
  enum class Admit {
    kAlways,        // it ends or answers work under way: bounded by that work
    kUnlessBehind,  // it starts new work: refused past the high watermark
  };

  // Any thread. False, with the item not sent, once the link has closed, or
  // when it would start new work past the high watermark. It goes out in the
  // write round after the next Wake() (the router wakes a link once per
  // batch of commands, the gateway once per event). The item is serialised
  // here: the caller keeps it, and may build it on an arena of its own.
  bool Enqueue(const OutItem& item, Admit admit) ABSL_LOCKS_EXCLUDED(mu_) {
    const size_t size = item.ByteSizeLong();
    const size_t bytes = BatchQueue::EntryBytes(size);
    absl::MutexLock lock(&mu_);
    if (closed_) {
      return false;
    }
    if (admit == Admit::kUnlessBehind && queue_.queued_bytes() + bytes > kLinkHighWatermark) {
      if (refused_++ % 1000 == 0) {
        LogWarn("the link's peer is behind; refusing new work toward it",
                {{"peer", options_.peer_role},
                 {"queued_bytes", static_cast<int64_t>(queue_.queued_bytes())},
                 {"refused", static_cast<int64_t>(refused_)}});
      }
      return false;
    }
    // Under the lock, straight into the batch, which is written as it is: a
    // message's bytes are made once and copied no more (a write round takes a
    // lone batch by swapping buffers). The lock is held for a large message's
    // copy (a 16 MiB tab answer: milliseconds), which other threads' enqueues
    // wait out; before, the write round made the same copy later under it.
    char* at = queue_.Append(size);
    if (at == nullptr) {
      return false;  // (the queue's own bound is SIZE_MAX: the watermarks bound it)
    }
    item.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(at));
    if (!behind_ && queue_.queued_bytes() > kLinkHighWatermark) {
      behind_ = true;
      OnBehind(true);
    }
    return true;
  }

  // Nothing queued, no write in flight, and what was written acknowledged (or
  // the link has closed): a drain may close it.
  bool Flushed() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return closed_ || (queue_.empty() && !writing() && Delivered());
  }

 protected:
  LinkEndpoint(boost::asio::io_context& io, std::shared_ptr<LinkTls> tls, Options options)
      : LinkChannel(io, std::move(tls)), options_(std::move(options)) {}

  // The server's side: the peer's role is checked, and an error refuses the
  // link. The client's: the server has admitted the link.
  virtual absl::Status OnAdmitted() = 0;
  // A batch the peer sent, in order (may be moved from).
  virtual void OnBatch(InBatch& batch) = 0;
  // The peer passed the high watermark (true), or is under the low one again
  // (false). Any thread, under the endpoint's lock (so that the two alternate
  // in order): it must not take this endpoint's lock (Enqueue, Flushed); what
  // only posts to the channel's thread (Wake, ResumeReading) is fine. Rare
  // (a link backed up), so the lock held meanwhile costs nothing on the hot
  // path.
  virtual void OnBehind(bool behind) {}
  // Once: the link has ended (nothing more is read, nothing queued is sent).
  virtual void OnEnded(const absl::Status& status) = 0;

 private:
  absl::Status OnOpened() final {
    if (tls() && peer_role() != options_.peer_role) {
      if (options_.server) {
        // (A client says why in its own line about the link's end.)
        LogWarn("link refused: the peer's certificate is not of the role expected",
                {{"peer", peer()}, {"role", peer_role()}, {"expected", options_.peer_role}});
      }
      return absl::PermissionDeniedError(absl::StrCat(
          "the link's peer is not a ", options_.peer_role,
          ": its certificate's common name is \"", peer_role(), "\""));
    }
    if (!options_.server) {
      return absl::OkStatus();
    }
    if (absl::Status admitted = OnAdmitted(); !admitted.ok()) {
      return admitted;
    }
    absl::MutexLock lock(&mu_);
    admit_due_ = true;  // the empty frame that tells the client goes first
    return absl::OkStatus();
  }

  absl::Status OnFrame(absl::string_view frame) final {
    if (!options_.server && !admitted_) {
      // The server's first frame, empty: it has admitted this link.
      admitted_ = true;
      if (absl::Status admitted = OnAdmitted(); !admitted.ok()) {
        return admitted;
      }
      if (frame.empty()) {
        return absl::OkStatus();
      }
    }
    if (!in_.Parse(frame, [this](InBatch& batch) { OnBatch(batch); })) {
      const std::string type = InBatch().GetTypeName();
      LogWarn(absl::StrCat("a link frame is not a ", type, "; ending the link"),
              {{"peer", peer()}, {"role", peer_role()}});
      return absl::InvalidArgumentError(absl::StrCat("the peer sent a frame that is not a ", type));
    }
    return absl::OkStatus();
  }

  bool FillWrite(std::string& out) final ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (admit_due_) {
      AppendLinkFrameHeader(0, out);
      admit_due_ = false;
    }
    while (out.size() < kLinkBatchBytes) {
      std::string* batch = queue_.Next();
      if (batch == nullptr) {
        break;
      }
      WriteLinkFrameHeader(batch->size() - kLinkFrameHeaderBytes, batch->data());
      if (out.empty()) {
        out.swap(*batch);  // the queue keeps out's buffer for a later batch
      } else {
        out.append(*batch);
      }
      queue_.Written();
    }
    if (behind_ && queue_.queued_bytes() < kLinkLowWatermark) {
      behind_ = false;
      OnBehind(false);
    }
    return !out.empty();
  }

  void OnClosed(const absl::Status& status) final ABSL_LOCKS_EXCLUDED(mu_) {
    {
      absl::MutexLock lock(&mu_);
      closed_ = true;
      if (std::exchange(behind_, false)) {
        OnBehind(false);
      }
    }
    OnEnded(status);
  }

  const Options options_;
  LinkFrameParser<InBatch> in_;  // the channel's thread's alone
  bool admitted_ = false;        // client: the server's first frame came; the thread's alone
  absl::Mutex mu_;
  // Unbounded by itself: the watermarks bound it (refusals, OnBehind).
  BatchQueue queue_ ABSL_GUARDED_BY(mu_){kLinkBatchBytes, SIZE_MAX, kLinkFrameHeaderBytes};
  bool admit_due_ ABSL_GUARDED_BY(mu_) = false;
  bool behind_ ABSL_GUARDED_BY(mu_) = false;  // past the high watermark, not yet under the low
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t refused_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace relay::common
