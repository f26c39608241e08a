#include "router/net/gateway_links.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/batch_queue.h"
#include "common/link_channel.h"
#include "common/link_frame.h"
#include "common/link_frame_parser.h"
#include "common/log.h"
#include "relay/v1/router.pb.h"

namespace relay::router {

using relay::v1::GatewayBatch;
using relay::v1::RouterBatch;
using relay::v1::RouterCommand;

namespace {

// A write takes batches up to this much; a batch is cut there too, so that one
// large answer does not hold up the rest.
constexpr size_t kBatchBytes = 1 << 20;
// Backpressure (ARCHITECTURE.md "Faults": no limit ends a link other
// accounts share): once a gateway's commands waiting pass the high
// watermark, the router reads no link until every link's queue is under the
// low one. What keeps them from growing meanwhile is that nothing is read;
// a gateway that stops reading altogether is found hung by the link's
// liveness (its bytes untaken for 3 s) and its link ends.
constexpr size_t kHighWatermark = 64 << 20;
constexpr size_t kLowWatermark = 16 << 20;

// The read gate every link of the router shares: each read can cause
// commands for any link, so while any link's queue is over its high
// watermark none is read. Thread-safe.
class LinkPressure {
 public:
  bool paused() const { return over_.load(std::memory_order_acquire) > 0; }
  void Add(std::weak_ptr<common::LinkChannel> channel) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    std::erase_if(channels_, [](const auto& c) { return c.expired(); });
    channels_.push_back(std::move(channel));
  }
  void Raise() {
    if (over_.fetch_add(1, std::memory_order_acq_rel) == 0) {
      common::LogWarn("a gateway's link is backed up; reading no link until it drains");
    }
  }
  void Lower() ABSL_LOCKS_EXCLUDED(mu_) {
    if (over_.fetch_sub(1, std::memory_order_acq_rel) != 1) {
      return;
    }
    common::LogInfo("the links have drained; reading again");
    absl::MutexLock lock(&mu_);
    for (const auto& weak : channels_) {
      if (auto channel = weak.lock()) {
        channel->ResumeReading();
      }
    }
  }

 private:
  std::atomic<int> over_{0};  // links over their high watermark
  absl::Mutex mu_;
  std::vector<std::weak_ptr<common::LinkChannel>> channels_ ABSL_GUARDED_BY(mu_);
};

// One gateway's link. Reads, and the writes they cause, run on the links'
// thread; the operators' RPCs and the sweeper push commands from theirs, so
// the queue is under mu_ (uncontended on the hot path: no system call).
class GatewayLink final : public common::LinkChannel, public LinkWriter {
 public:
  GatewayLink(boost::asio::io_context& io, std::shared_ptr<common::LinkTls> tls, RouterHub& hub,
              std::shared_ptr<LinkPressure> pressure)
      : LinkChannel(io, std::move(tls)), hub_(hub), pressure_(std::move(pressure)) {}

  void Push(RouterCommand&& command) override ABSL_LOCKS_EXCLUDED(mu_) {
    size_t bytes = command.ByteSizeLong();
    absl::MutexLock lock(&mu_);
    if (closed_) {
      return;
    }
    queue_.Push(std::move(command), bytes);
    if (!over_ && queue_.queued_bytes() > kHighWatermark) {
      over_ = true;
      pressure_->Raise();
    }
  }

  void Flush() override { Wake(); }

 private:
  bool ReadPaused() override { return pressure_->paused(); }

  absl::Status OnOpened() override {
    if (tls() && peer_role() != common::kRoleGateway) {
      common::LogWarn("link refused: the caller's certificate is not a gateway's",
                      {{"peer", peer()}, {"role", peer_role()}});
      return absl::PermissionDeniedError("not a gateway");
    }
    std::shared_ptr<LinkWriter> self(shared_from_this(), this);
    pressure_->Add(weak_from_this());
    uint64_t id = hub_.AddLink(self);
    common::LogInfo("gateway linked", {{"link", id}, {"peer", peer()}});
    absl::MutexLock lock(&mu_);
    link_id_.store(id);
    accepted_ = true;  // the empty frame that tells the gateway goes first
    return absl::OkStatus();
  }

  absl::Status OnFrame(absl::string_view frame) override {
    const uint64_t link = link_id_.load();
    if (!in_.Parse(frame, [&](GatewayBatch& batch) { hub_.Handle(link, batch); })) {
      common::LogWarn("a gateway's link frame is not a GatewayBatch; ending the link",
                      {{"link", link_id_.load()}});
      return absl::InvalidArgumentError("a frame that is not a GatewayBatch");
    }
    return absl::OkStatus();
  }

  bool FillWrite(std::string& out) override ABSL_LOCKS_EXCLUDED(mu_) {
    bool drained = false;
    {
      absl::MutexLock lock(&mu_);
      if (accepted_) {
        common::AppendLinkFrameHeader(0, out);
        accepted_ = false;
      }
      while (out.size() < kBatchBytes) {
        RouterBatch* batch = queue_.Next();
        if (batch == nullptr) {
          break;
        }
        common::AppendLinkFrame(*batch, out);
        queue_.Written();
      }
      if (over_ && queue_.queued_bytes() < kLowWatermark) {
        over_ = false;
        drained = true;
      }
    }
    if (drained) {
      pressure_->Lower();  // outside our lock: it resumes every link's reading
    }
    return !out.empty();
  }

  void OnClosed(const absl::Status& status) override {
    bool was_over;
    {
      absl::MutexLock lock(&mu_);
      closed_ = true;
      was_over = std::exchange(over_, false);
    }
    if (was_over) {
      pressure_->Lower();
    }
    uint64_t id = link_id_.load();
    if (id != 0) {
      // Outside our lock: the hub takes its own, then ours.
      hub_.RemoveLink(id);
      common::LogInfo("gateway unlinked", {{"link", id}, {"why", status.message()}});
    }
  }

  RouterHub& hub_;
  const std::shared_ptr<LinkPressure> pressure_;
  common::LinkFrameParser<GatewayBatch> in_;  // the links' thread's alone
  absl::Mutex mu_;
  std::atomic<uint64_t> link_id_{0};  // set once accepted
  // Unbounded by itself: the watermarks bound it (see LinkPressure).
  common::BatchQueue<RouterBatch, RouterCommand, &RouterBatch::add_commands> queue_
      ABSL_GUARDED_BY(mu_){kBatchBytes, SIZE_MAX};
  bool over_ ABSL_GUARDED_BY(mu_) = false;  // past the high watermark, not yet under the low
  bool accepted_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

absl::StatusOr<std::unique_ptr<GatewayLinks>> GatewayLinks::Start(const std::string& listen,
                                                                  const common::GrpcTls& tls,
                                                                  RouterHub& hub) {
  auto link_tls = common::LinkTls::Make(tls, common::LinkTls::Side::kServer);
  if (!link_tls.ok()) {
    return link_tls.status();
  }
  auto pressure = std::make_shared<LinkPressure>();
  auto listener = common::LinkListener::Start(
      listen, *link_tls, [&hub, tls = *link_tls, pressure](boost::asio::io_context& io) {
        return std::make_shared<GatewayLink>(io, tls, hub, pressure);
      });
  if (!listener.ok()) {
    return listener.status();
  }
  return std::unique_ptr<GatewayLinks>(new GatewayLinks(*std::move(listener)));
}

GatewayLinks::GatewayLinks(std::unique_ptr<common::LinkListener> listener)
    : listener_(std::move(listener)) {}

GatewayLinks::~GatewayLinks() = default;

int GatewayLinks::port() const { return listener_->port(); }

void GatewayLinks::Stop() { listener_->Stop(); }

}  // namespace relay::router
