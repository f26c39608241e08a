#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "gateway/core/catalogue.h"
#include "gateway/core/jsonrpc.h"
#include "gateway/rpc/router_client.h"
#include "gateway/core/session_id.h"
#include "gateway/core/session_state.h"
#include "gateway/core/tab_protocol.h"

namespace relay::gateway {

inline constexpr absl::string_view kDefaultNoTabMessage =
    "No editor is connected for your account. Open the editor and switch the agent on in the "
    "account menu.";

struct DispatchOptions {
  std::string no_tab_message = std::string(kDefaultNoTabMessage);
  absl::Duration call_timeout = absl::Seconds(30);
  int max_json_depth = kDefaultMaxJsonDepth;
  std::string server_name = "mcp-tab-relay";
  std::string server_version = "0.1.0";
};

// What the agent side knows of a request besides its body: its headers, and
// the role its bearer token has (agent/verify), which picks the catalogue view.
struct AgentHeaders {
  std::optional<std::string> session_id;        // Mcp-Session-Id
  std::optional<std::string> protocol_version;  // MCP-Protocol-Version
  bool accepts_sse = false;                     // Accept has text/event-stream
  std::string role;                             // the token's role; "" when none
};

// An HTTP answer the gateway gives without asking anyone.
struct HttpReply {
  int status = 200;
  std::string body;        // JSON; empty means no body
  std::string session_id;  // when set, sent as Mcp-Session-Id
};

// A JSON answer (most of the dispatcher's).
inline HttpReply JsonReply(int status, std::string body) {
  return HttpReply{status, std::move(body), {}};
}

// A request that the account's tab must answer.
struct ForwardPlan {
  nlohmann::json id;  // the agent's id, restored on the answer
  bool is_tool_call = false;
  nlohmann::json agent_progress_token;  // restored on progress notifications; null if none
  ForwardRequest request;
};

// What a request tells the router about its session besides the answer.
struct SessionEffect {
  enum class Kind { kNone, kSubscribe, kUnsubscribe, kLogLevel, kAgentReply, kAgentCancel };
  Kind kind = Kind::kNone;
  std::string value;  // uri, level, or the agent's request id (JSON) to cancel
  std::string reason;
  uint64_t call_id = 0;        // kAgentReply
  std::string tab_request_id;  // kAgentReply
  bool is_error = false;       // kAgentReply
  std::string payload;         // kAgentReply
};

// The MCP messages the gateway counts by name (relay_gateway_mcp_messages_total): a
// fixed set, so that an agent's made-up method names cannot grow the metrics.
inline constexpr const char* kMcpMethodLabels[] = {
    "initialize",         "ping",          "tools/list",          "tools/call",
    "resources/list",     "resources/templates/list",            "resources/read",
    "resources/subscribe", "resources/unsubscribe",              "prompts/list",
    "prompts/get",        "completion/complete",                 "logging/setLevel",
    "notification",       "response",      "other"};
inline constexpr size_t kMcpMethodLabelCount =
    sizeof(kMcpMethodLabels) / sizeof(kMcpMethodLabels[0]);

struct PostDecision {
  std::variant<HttpReply, ForwardPlan> action;
  // Index into kMcpMethodLabels of the message decided; a batch's are in batch,
  // a body that is not a JSON-RPC message counts as "other".
  size_t method_label = kMcpMethodLabelCount - 1;
  std::string session;       // the verified session the request belongs to, if any
  bool new_session = false;  // initialize: the router must learn of it now
  SessionEffect effect;
  // A batch (2025-03-26 only): one decision per message, answered together as
  // a JSON array of the answers that have a body; action is unused then.
  std::vector<PostDecision> batch;
};

// A GET that opens the session's stream.
struct StreamPlan {
  std::string session;
};

// The agent side of MCP (2025 revisions) as plain logic: what to answer, or
// what to forward, for one request. No sockets, no RPCs; thread-safe (const).
class McpDispatcher {
 public:
  McpDispatcher(const SessionIdSigner& signer, const CatalogueFile& catalogue,
                const EndedSessions& ended, DispatchOptions options)
      : signer_(signer), catalogue_(catalogue), ended_(ended), options_(std::move(options)) {}

  PostDecision HandlePost(const std::string& account, const AgentHeaders& headers,
                          absl::string_view body) const;

  // GET: the session's notification stream, or why not.
  std::variant<HttpReply, StreamPlan> HandleGet(const std::string& account,
                                                const AgentHeaders& headers) const;

  // DELETE: ends the session (204), or 400/404 as for a POST.
  HttpReply HandleDelete(const std::string& account, const AgentHeaders& headers) const;

  // The agent's answer once the forwarded call ended.
  HttpReply FinishForward(const ForwardPlan& plan, ForwardOutcome outcome) const;

  // A message from the tab for the agent during a call, as the agent must see
  // it: its own progress token restored.
  std::string AgentEvent(const ForwardPlan& plan, std::string message) const;

  // When a tab's request to the agent cannot be delivered (the client takes
  // no SSE, or the call is in a batch): the error answer for the tab, as an
  // AgentReply effect; kNone if message is not such a request.
  SessionEffect RefuseTabRequest(absl::string_view message) const;

  const DispatchOptions& options() const { return options_; }

 private:
  std::optional<HttpReply> CheckVersionHeader(const std::optional<std::string>& version) const;
  // 400 without a session id, 404 for a bad, ended or another account's one.
  std::optional<HttpReply> CheckSession(const std::string& account,
                                        const std::optional<std::string>& session_id,
                                        const nlohmann::json& id) const;
  HttpReply Initialize(const std::string& account, const RpcMessage& message,
                       std::string* session) const;
  PostDecision HandleBatch(const std::string& account, const AgentHeaders& headers,
                           nlohmann::json batch) const;
  PostDecision Decide(const std::string& account, const AgentHeaders& headers,
                      RpcMessage message) const;
  // A forwarded request that names an entry hidden from role: the error of an
  // unknown name, as if the entry did not exist.
  std::optional<HttpReply> RefuseHidden(const RpcMessage& message, absl::string_view role) const;
  PostDecision HandleMessage(const std::string& account, const AgentHeaders& headers,
                             RpcMessage message) const;
  HttpReply Failure(const ForwardPlan& plan, int code, absl::string_view text) const;

  const SessionIdSigner& signer_;
  const CatalogueFile& catalogue_;
  const EndedSessions& ended_;
  DispatchOptions options_;
};

}  // namespace relay::gateway
