#include "router/net/gateway_links.h"

#include <atomic>
#include <cstdint>
#include <utility>

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
// A gateway that stops reading its link: its commands wait up to this much,
// then the link ends (the gateway reconnects and re-announces).
constexpr size_t kMaxQueuedBytes = 256 << 20;

// One gateway's link. Reads, and the writes they cause, run on the links'
// thread; the operators' RPCs and the sweeper push commands from theirs, so
// the queue is under mu_ (uncontended on the hot path: no system call).
class GatewayLink final : public common::LinkChannel, public LinkWriter {
 public:
  GatewayLink(boost::asio::io_context& io, std::shared_ptr<common::LinkTls> tls, RouterHub& hub)
      : LinkChannel(io, std::move(tls)), hub_(hub) {}

  void Push(RouterCommand&& command) override ABSL_LOCKS_EXCLUDED(mu_) {
    size_t bytes = command.ByteSizeLong();
    absl::MutexLock lock(&mu_);
    if (closed_) {
      return;
    }
    if (!queue_.Push(std::move(command), bytes)) {
      common::LogWarn("gateway not reading its link; ending it", {{"link", link_id_.load()}});
      closed_ = true;
      Close(absl::ResourceExhaustedError("the gateway is not reading its link"));
    }
  }

  void Flush() override { Wake(); }

 private:
  absl::Status OnOpened() override {
    if (tls() && peer_role() != common::kRoleGateway) {
      common::LogWarn("link refused: the caller's certificate is not a gateway's",
                      {{"peer", peer()}, {"role", peer_role()}});
      return absl::PermissionDeniedError("not a gateway");
    }
    std::shared_ptr<LinkWriter> self(shared_from_this(), this);
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
    return !out.empty();
  }

  void OnClosed(const absl::Status& status) override {
    {
      absl::MutexLock lock(&mu_);
      closed_ = true;
    }
    uint64_t id = link_id_.load();
    if (id != 0) {
      // Outside our lock: the hub takes its own, then ours.
      hub_.RemoveLink(id);
      common::LogInfo("gateway unlinked", {{"link", id}, {"why", status.message()}});
    }
  }

  RouterHub& hub_;
  common::LinkFrameParser<GatewayBatch> in_;  // the links' thread's alone
  absl::Mutex mu_;
  std::atomic<uint64_t> link_id_{0};  // set once accepted
  common::BatchQueue<RouterBatch, RouterCommand, &RouterBatch::add_commands> queue_
      ABSL_GUARDED_BY(mu_){kBatchBytes, kMaxQueuedBytes};
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
  auto listener = common::LinkListener::Start(
      listen, *link_tls, [&hub, tls = *link_tls](boost::asio::io_context& io) {
        return std::make_shared<GatewayLink>(io, tls, hub);
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
