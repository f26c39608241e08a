#include "router/net/gateway_links.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/link/link_endpoint.h"
#include "common/link/link_listener.h"
#include "common/log.h"
#include "relay/v1/router.pb.h"

namespace relay::router {

using relay::v1::GatewayBatch;
using relay::v1::RouterBatch;
using relay::v1::RouterCommand;

namespace {

using GatewayLinkEndpoint =
    common::LinkEndpoint<GatewayBatch, RouterCommand>;

// Backpressure (ARCHITECTURE.md "Faults": no limit ends a link other
// accounts share): once a gateway's commands waiting pass the high
// watermark, the router reads no link until every link's queue is under the
// low one (common/link/link_endpoint.h). What keeps them from growing
// meanwhile is that nothing is read; a gateway that stops reading altogether
// is found hung by the link's liveness (its bytes untaken for 3 s) and its
// link ends. This is the read gate every link of the router shares: each
// read can cause commands for any link, so while any link's queue is over its
// high watermark none is read. Thread-safe.
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

// One gateway's link: reads, and the writes they cause, run on the links'
// thread; the operators' RPCs and the sweeper push commands from theirs.
class GatewayLink final : public GatewayLinkEndpoint, public LinkWriter {
 public:
  GatewayLink(boost::asio::io_context& io, std::shared_ptr<common::LinkTls> tls, RouterHub& hub,
              std::shared_ptr<LinkPressure> pressure)
      : GatewayLinkEndpoint(io, std::move(tls),
                            {.peer_role = std::string(common::kRoleGateway), .server = true}),
        hub_(hub), pressure_(std::move(pressure)) {}

  void Push(const RouterCommand& command) override { Enqueue(command, Admit::kAlways); }
  void Flush() override { Wake(); }

 private:
  bool ReadPaused() override { return pressure_->paused(); }

  absl::Status OnAdmitted() override {
    pressure_->Add(weak_from_this());
    const uint64_t id = hub_.AddLink(std::shared_ptr<LinkWriter>(shared_from_this(), this));
    link_id_.store(id);
    common::LogInfo("gateway linked", {{"link", id}, {"peer", peer()}});
    return absl::OkStatus();
  }

  void OnBatch(GatewayBatch& batch) override { hub_.Handle(link_id_.load(), batch); }

  // Under the endpoint's lock; the pressure takes only its own.
  void OnBehind(bool behind) override {
    if (behind) {
      pressure_->Raise();
    } else {
      pressure_->Lower();
    }
  }

  void OnEnded(const absl::Status& status) override {
    const uint64_t id = link_id_.load();
    if (id != 0) {
      hub_.RemoveLink(id);
      common::LogInfo("gateway unlinked", {{"link", id}, {"why", status.message()}});
    }
  }

  RouterHub& hub_;
  const std::shared_ptr<LinkPressure> pressure_;
  std::atomic<uint64_t> link_id_{0};  // set once admitted
};

}  // namespace

absl::StatusOr<std::unique_ptr<GatewayLinks>> GatewayLinks::Start(const std::string& listen,
                                                                  const common::ServiceTls& tls,
                                                                  RouterHub& hub) {
  auto link_tls = common::LinkTls::Make(tls, common::LinkTls::Side::kServer);
  if (!link_tls.ok()) {
    return link_tls.status();
  }
  auto pressure = std::make_shared<LinkPressure>();
  auto listener = common::LinkListener::Start(
      listen, [&hub, tls = *link_tls, pressure](boost::asio::io_context& io) {
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
