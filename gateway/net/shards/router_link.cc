#include "gateway/net/shards/router_link.h"

#include <string>
#include <utility>

#include "common/service_tls.h"

namespace relay::gateway {

namespace {

// What starts new work at the router, refused while it is behind; everything
// else ends or answers work under way (or announces what exists), and is
// bounded by it.
bool StartsWork(const relay::v1::GatewayEvent& event) {
  switch (event.event_case()) {
    case relay::v1::GatewayEvent::kCallStart:
    case relay::v1::GatewayEvent::kCallResume:
    case relay::v1::GatewayEvent::kTabNotification:
    case relay::v1::GatewayEvent::kSessionTouch:
      return true;
    default:
      return false;
  }
}

}  // namespace

RouterLink::RouterLink(RouterLinkOwner& owner, boost::asio::io_context& io,
                       std::shared_ptr<common::LinkTls> tls)
    : RouterLinkEndpoint(io, std::move(tls),
                         {.peer_role = std::string(common::kRoleRouter), .server = false}),
      owner_(owner) {}

bool RouterLink::Send(const relay::v1::GatewayEvent& event) {
  const Admit admit = StartsWork(event) ? Admit::kUnlessBehind : Admit::kAlways;
  if (!Enqueue(event, admit)) {
    return false;
  }
  Wake();  // a write round on the link's next turn takes it, and whatever else is queued by then
  return true;
}

absl::Status RouterLink::OnAdmitted() {
  owner_.OnLinkEstablished();
  return absl::OkStatus();
}

}  // namespace relay::gateway
