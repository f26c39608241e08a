#include "gateway/net/router_link.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/grpc_tls.h"
#include "common/link_frame.h"
#include "common/log.h"

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

bool RouterLink::Send(relay::v1::GatewayEvent&& event) {
  size_t bytes = event.ByteSizeLong();
  {
    absl::MutexLock lock(&mu_);
    if (closed_) {
      return false;
    }
    if (queue_.queued_bytes() + bytes > kLinkHighWatermark && StartsWork(event)) {
      if (refused_++ % 1000 == 0) {
        common::LogWarn("the router is behind on this link; refusing new calls and notifications",
                        {{"queued_bytes", static_cast<int64_t>(queue_.queued_bytes())},
                         {"refused", static_cast<int64_t>(refused_)}});
      }
      return false;
    }
    queue_.Push(std::move(event), bytes);
  }
  Wake();
  return true;
}

bool RouterLink::Flushed() {
  absl::MutexLock lock(&mu_);
  return closed_ || (queue_.empty() && !writing() && Delivered());
}

absl::Status RouterLink::OnOpened() {
  // The server's certificate names the host dialled; its role must be a
  // router's too (authsvc's names the same hosts).
  if (tls() && peer_role() != common::kRoleRouter) {
    return absl::PermissionDeniedError(absl::StrCat(
        "the link's peer is not a router: its certificate's common name is \"", peer_role(), "\""));
  }
  return absl::OkStatus();
}

absl::Status RouterLink::OnFrame(absl::string_view frame) {
  if (!accepted_) {
    // The router's first frame, empty: it has admitted this gateway.
    accepted_ = true;
    owner_.OnLinkEstablished();
    if (frame.empty()) {
      return absl::OkStatus();
    }
  }
  if (!in_.Parse(frame, [this](relay::v1::RouterBatch& batch) { owner_.OnBatch(batch); })) {
    return absl::InvalidArgumentError("the router sent a frame that is not a RouterBatch");
  }
  return absl::OkStatus();
}

bool RouterLink::FillWrite(std::string& out) {
  absl::MutexLock lock(&mu_);
  while (out.size() < kLinkBatchBytes) {
    relay::v1::GatewayBatch* batch = queue_.Next();
    if (batch == nullptr) {
      break;
    }
    common::AppendLinkFrame(*batch, out);
    queue_.Written();
  }
  return !out.empty();
}

void RouterLink::OnClosed(const absl::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
  }
  owner_.OnLinkEnded(this, status);
}

}  // namespace relay::gateway
