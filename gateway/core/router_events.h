#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "gateway/core/mcp_dispatcher.h"
#include "gateway/core/tab_protocol.h"
#include "relay/v1/router.pb.h"

namespace relay::gateway {

// What the gateway tells an account's router shard about agent sessions,
// streams and tabs, built from the dispatcher's decisions and the tab
// protocol's messages: plain functions, so that which event each sends is
// tested without a link.

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
// and closed. confirm: the router answers StreamOpened once it fans out to the stream.
relay::v1::GatewayEvent StreamOpenEvent(uint64_t stream_id, absl::string_view account,
                                        absl::string_view session, uint64_t last_event_id,
                                        bool confirm = false);
relay::v1::GatewayEvent StreamCloseEvent(uint64_t stream_id, absl::string_view session);

// What the router knows of a tab.
struct TabAnnouncement {
  std::string account;
  std::string role;
  std::string client_name;
  std::string client_version;
  uint64_t generation = 0;  // when its ticket was redeemed: the newest tab wins
  // When a tab that came back with its resume credential was admitted (Unix µs, this
  // gateway's clock; 0 for a ticket): of one generation, the latest connection holds.
  uint64_t resumed_at = 0;
  // Accepted before: a re-announcement, which the router takes without an answer.
  bool live = false;
};
// A tab is up (after its ticket was redeemed, and again after a link came back), and gone.
relay::v1::GatewayEvent TabUpEvent(uint64_t tab_id, const TabAnnouncement& tab);
relay::v1::GatewayEvent TabDownEvent(uint64_t tab_id);
// The tab's answer to a call, into event (empty; it is answered on the hot
// path, so its caller may build it on an arena).
void TabReplyInto(relay::v1::GatewayEvent& event, uint64_t tab_id, uint64_t call_id,
                  bool is_error, std::string payload);
// A notification of the tab for agents (moved from).
relay::v1::GatewayEvent TabNotificationEvent(uint64_t tab_id, TabNotice notice);
// A request of the tab to the agent of a call (moved from).
relay::v1::GatewayEvent TabRequestEvent(uint64_t tab_id, AgentRequest request);

}  // namespace relay::gateway
