#pragma once

#include <memory>

#include "absl/status/status.h"
#include "common/link/link_endpoint.h"
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

using RouterLinkEndpoint =
    common::LinkEndpoint<relay::v1::RouterBatch, relay::v1::GatewayEvent>;

// The gateway's side of one router shard's link (docs/protocols.md), on the
// gateway's first I/O thread. While the router reads slowly (it pauses reading
// while another gateway is backed up), new work (calls, tabs' notifications)
// is refused past the high watermark and fails at once with the relay's
// message; what ends or answers work under way is always queued.
class RouterLink final : public RouterLinkEndpoint {
 public:
  RouterLink(RouterLinkOwner& owner, boost::asio::io_context& io,
             std::shared_ptr<common::LinkTls> tls);

  // Any thread: queued and a write round asked for. False once the link has
  // ended, or when the event starts new work and the router is behind: it is
  // dropped.
  bool Send(const relay::v1::GatewayEvent& event);

 private:
  absl::Status OnAdmitted() override;
  void OnBatch(relay::v1::RouterBatch& batch) override { owner_.OnBatch(batch); }
  void OnEnded(const absl::Status& status) override { owner_.OnLinkEnded(this, status); }
  // A router that pauses reading still pings: its silence shows it hung.
  bool EndsOnWriteStall() const override { return false; }

  RouterLinkOwner& owner_;
};

}  // namespace relay::gateway
