#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "absl/strings/string_view.h"
#include "gateway/core/jsonrpc.h"
#include "nlohmann/json.hpp"

namespace relay::gateway {

// Close codes of TAB-PROTOCOL.md.
inline constexpr uint16_t kCloseBadFirstMessage = 4400;
inline constexpr uint16_t kCloseBadTicket = 4401;
// Every token of the account was revoked (its password changed, it was
// deleted or renamed): the page must sign in again, not just reconnect.
inline constexpr uint16_t kCloseSignedOut = 4403;
inline constexpr uint16_t kCloseHelloTimeout = 4408;
inline constexpr uint16_t kCloseDisplaced = 4409;
inline constexpr uint16_t kCloseTooBig = 4413;
inline constexpr uint16_t kCloseTryLater = 1013;
// RFC 6455's own (§7.4.1): the gateway shuts down or drains; a frame the
// protocol forbids; a text message that is not UTF-8.
inline constexpr uint16_t kCloseGoingAway = 1001;
inline constexpr uint16_t kCloseProtocolError = 1002;
inline constexpr uint16_t kCloseNotUtf8 = 1007;

// The hello's client name and version are cut to this many bytes.
inline constexpr size_t kMaxClientText = 64;

// The tab protocol's rules (TAB-PROTOCOL.md), apart from the WebSocket that
// carries them: what a first message must be, what the hello is answered,
// which of a tab's notifications reach agents and with what, and how a tab's
// request to an agent is addressed. Plain functions on decoded messages; the
// TabSession adds the socket, the phases and the router.

// relay/hello: the first message of every tab.
struct TabHello {
  nlohmann::json id;  // the hello's id, to answer it
  std::string ticket;
  std::string resume;          // a resume credential instead of a ticket (tab_resume.h)
  std::string client_name;     // params.client.name, if a string
  std::string client_version;  // params.client.version, if a string
};

// The hello in text, or nothing when text is not a relay/hello request with a
// string ticket or a string resume credential (the tab is then closed with 4400).
std::optional<TabHello> ParseTabHello(absl::string_view text, int max_depth);

// The hello's answer: the account the ticket named, the tab's id and how many
// agents are connected (TAB-PROTOCOL.md "relay/hello").
std::string EncodeHelloAnswer(const nlohmann::json& hello_id, const std::string& account,
                              const std::string& role, const std::string& tab_id,
                              uint32_t agents);

// A tab's notification as it goes to the router (fan-out to the account's
// agents), with what the router needs without parsing params again.
struct TabNotice {
  std::string method;
  std::string uri;             // params.uri (resources/updated)
  std::string level;           // params.level (notifications/message)
  std::string progress_token;  // params.progressToken (notifications/progress), a string
  std::string line;            // params._meta["relay/line"]: the view line
  uint64_t call_id = 0;        // params._meta["relay/requestId"]: the call it belongs to
  std::string params;          // the params as JSON text
};

// The notification for agents in message, or nothing when it is not one a tab
// may send them (the tab's own notifications/initialized, an unknown method, a
// resources/updated without its uri): those are dropped.
// A notification for every agent of the account carries at most this much
// params (else it is dropped); a view line is cut to kMaxViewLineBytes.
inline constexpr size_t kMaxFanOutParamsBytes = 64 * 1024;
inline constexpr size_t kMaxViewLineBytes = 2048;
std::optional<TabNotice> ParseTabNotice(const RpcMessage& message);

// The prefix of ids the relay gives to a tab's requests toward an agent:
// "relay/<call id>/<the tab's own id as JSON>".
inline constexpr absl::string_view kTabRequestIdPrefix = "relay/";

// A tab's request to the agent of a call in progress (sampling/createMessage,
// elicitation/create, roots/list), readdressed so that the agent's answer
// finds its way back through any gateway.
struct AgentRequest {
  uint64_t call_id = 0;        // the call it belongs to
  std::string tab_request_id;  // the tab's own id, as JSON text
  std::string message;         // the request the agent gets, JSON text
};

// Whether method is a request a tab may send to an agent.
bool IsRequestToAgent(absl::string_view method);

// The agent's request for message (moved from), or the error message the tab
// gets (-32602) when it does not name the call in progress.
std::variant<AgentRequest, std::string> ToAgentRequest(RpcMessage& message);

// The call and the tab's own id (JSON text) in the id of an agent's answer to
// such a request, or false when id is not one the relay gave.
bool ParseAgentReplyId(const nlohmann::json& id, uint64_t* call_id, std::string* tab_request_id);

// What a call's agent gets when the tab's answer to it could not be passed on
// (nested too deep, or not a valid response): a tool error for tools/call
// (the agent's model reads it), a JSON-RPC error (payload is its error object)
// for any other method.
struct TabAnswer {
  bool is_error = false;
  std::string payload;
};
// what: what was wrong with the tab's answer ("nested deeper than 100 levels").
TabAnswer UnreadableAnswer(bool is_tool_call, absl::string_view what);

}  // namespace relay::gateway
