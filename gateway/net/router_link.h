#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "common/batch_queue.h"
#include "common/link_channel.h"
#include "common/link_frame_parser.h"
#include "relay/v1/router.pb.h"

namespace relay::gateway {

class RouterLink;

// Who holds a RouterLink (a router shard) and hears what it reads. Called on
// the link's I/O thread.
class RouterLinkOwner {
 public:
  // The router accepted the link: it is up.
  virtual void OnLinkEstablished() = 0;
  // A batch of the router's commands, in order (may be moved from).
  virtual void OnBatch(relay::v1::RouterBatch& batch) = 0;
  // The link has ended (it never calls its owner again).
  virtual void OnLinkEnded(RouterLink* link, const absl::Status& status) = 0;

 protected:
  ~RouterLinkOwner() = default;
};

// A write takes batches up to this much; a batch is cut there too, so that one
// large message does not hold up the rest.
inline constexpr size_t kLinkBatchBytes = 1 << 20;
// A router that reads slowly (it pauses reading while a gateway is backed
// up): past this much waiting, new work is refused (calls fail at once with
// the relay's message, tabs' notifications are dropped) and only what ends or
// answers work already under way is queued, which is bounded by that work.
// No limit ends the link, which every account on it shares; a router that
// stops reading altogether is found hung by the link's liveness.
inline constexpr size_t kLinkHighWatermark = 64 << 20;

// One link to one router shard (docs/protocols.md), on the gateway's first I/O
// thread. Any thread sends events; they wait in a queue, and one write round
// per turn of the link's thread takes what is there: a lone call waits for
// nothing but that turn, and a loaded link writes many calls at once.
class RouterLink final : public common::LinkChannel {
 public:
  RouterLink(RouterLinkOwner& owner, boost::asio::io_context& io,
             std::shared_ptr<common::LinkTls> tls)
      : LinkChannel(io, std::move(tls)), owner_(owner) {}

  // Any thread. False once the link has ended, or when the event starts new
  // work (a call, a notification) and the router is behind: it is dropped.
  bool Send(relay::v1::GatewayEvent&& event) ABSL_LOCKS_EXCLUDED(mu_);
  // Nothing queued, no write in flight, and what was written acknowledged:
  // the drain may close it.
  bool Flushed() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  absl::Status OnOpened() override;
  absl::Status OnFrame(absl::string_view frame) override;
  bool FillWrite(std::string& out) override ABSL_LOCKS_EXCLUDED(mu_);
  void OnClosed(const absl::Status& status) override ABSL_LOCKS_EXCLUDED(mu_);
  bool EndsOnWriteStall() const override { return false; }

  RouterLinkOwner& owner_;
  common::LinkFrameParser<relay::v1::RouterBatch> in_;  // the link's thread's alone
  bool accepted_ = false;      // the router's first (empty) frame came
  absl::Mutex mu_;
  common::BatchQueue<relay::v1::GatewayBatch, relay::v1::GatewayEvent,
                     &relay::v1::GatewayBatch::add_events>
      queue_ ABSL_GUARDED_BY(mu_){kLinkBatchBytes, SIZE_MAX};
  bool closed_ ABSL_GUARDED_BY(mu_) = false;  // no more sends
  uint64_t refused_ ABSL_GUARDED_BY(mu_) = 0;  // events refused while the router is behind
};

}  // namespace relay::gateway
