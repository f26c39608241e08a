#pragma once

#include <cstdint>
#include <optional>

#include "absl/strings/string_view.h"
#include "gateway/core/mcp_dispatcher.h"
#include "relay/v1/router.pb.h"

namespace relay::gateway {

// What the gateway tells an account's router shard about agent sessions and
// streams, built from the dispatcher's decisions: plain functions, so that
// which event each decision sends is tested without a link.

// The event for a decision's session effect (subscribe, log level, an answer
// to or a cancel of a tab's request); none for kNone.
std::optional<relay::v1::GatewayEvent> EffectEvent(absl::string_view account,
                                                   absl::string_view session,
                                                   const SessionEffect& effect);
// The session is alive (its idle clock restarts at the router).
relay::v1::GatewayEvent SessionTouchEvent(absl::string_view account, absl::string_view session);
// The agent ended the session (DELETE).
relay::v1::GatewayEvent SessionEndEvent(absl::string_view account, absl::string_view session);
// A GET stream opened (or is announced again after a link came back: last_event_id 0),
// and closed.
relay::v1::GatewayEvent StreamOpenEvent(uint64_t stream_id, absl::string_view account,
                                        absl::string_view session, uint64_t last_event_id);
relay::v1::GatewayEvent StreamCloseEvent(uint64_t stream_id, absl::string_view session);

}  // namespace relay::gateway
