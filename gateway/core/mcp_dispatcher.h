#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "gateway/core/catalogue.h"
#include "common/crypto.h"
#include "gateway/core/jsonrpc.h"
#include "gateway/core/listen_filter.h"
#include "gateway/core/modern_request.h"
#include "gateway/core/request_state.h"
#include "gateway/core/router_client.h"
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
  // MCP 2026-07-28 served beside the 2025 era (--modern_era, on by default);
  // off, a modern request is answered as before the era existed (server/discover
  // is -32601), so that clients fall back to initialize.
  bool modern_era = true;
  // A 2025-03-26 batch's answers together (one response must hold them), and
  // its messages at most.
  size_t max_batch_answer_bytes = 16 << 20;
  size_t max_batch_messages = 1000;
}; 

// The error that stands for a batch message's answer when the batch's
// answers together would pass room bytes.
std::string BatchAnswerTooLarge(const nlohmann::json& id, size_t room);

// What the agent side knows of a request besides its body: its headers, and
// the role its bearer token has (agent/verify), which picks the catalogue view.
struct AgentHeaders {
  std::optional<std::string> session_id;        // Mcp-Session-Id
  std::optional<std::string> protocol_version;  // MCP-Protocol-Version
  bool accepts_sse = false;                     // Accept has text/event-stream
  std::string role;                             // the token's role; "" when none
  std::optional<std::string> mcp_method;        // Mcp-Method (2026-07-28)
  std::optional<std::string> mcp_name;          // Mcp-Name (2026-07-28)
  // Hex SHA-256 of the bearer (its first 16 bytes): a 2026-07-28 agent's name
  // at the router, for its "view changed" line and the agent count.
  std::string token_key;
};

// An HTTP answer the gateway gives without asking anyone.
struct HttpReply {
  int status = 200;
  std::string body;        // JSON; empty means no body
  std::string session_id;  // when set, sent as Mcp-Session-Id
  std::string allow;       // when set, sent as Allow (with 405)
};

// A JSON answer (most of the dispatcher's).
inline HttpReply JsonReply(int status, std::string body) {
  return HttpReply{status, std::move(body), {}, {}};
}

// What a 2026-07-28 call needs besides the 2025 plan: what the agent can be
// asked (multi round-trip requests), from which level its call's logs reach
// it, and the answers it already sent.
struct ModernCall {
  ClientCapabilities capabilities;
  int log_rank = -1;
  uint32_t round = 0;  // the last round answered (0 for a new call)
  std::string token_key;  // the agent's token, and the request's name or URI
  std::string target;     // (digest): what a requestState is bound to
  // Answers given without a requestState (a first call may carry them): by
  // key, tried on the tab's requests as they come.
  nlohmann::json early_answers = nlohmann::json::object();
};

// A request that the account's tab must answer.
struct ForwardPlan {
  nlohmann::json id;  // the agent's id, restored on the answer
  bool is_tool_call = false;
  std::optional<ModernCall> modern;
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
    "server/discover",    "subscriptions/listen",
    "notification",       "response",      "other"};
inline constexpr size_t kMcpMethodLabelCount =
    sizeof(kMcpMethodLabels) / sizeof(kMcpMethodLabels[0]);

// A 2026-07-28 subscriptions/listen: the stream to open, and what it hears.
struct ListenPlan {
  ListenFilter filter;
};

struct PostDecision {
  std::variant<HttpReply, ForwardPlan, ListenPlan> action;
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

// A 2026-07-28 round of a tab's requests to the agent, answered as
// input_required. The dispatcher decides what the agent is asked.
struct RoundRequest {
  uint64_t call_id = 0;         // the router's id of the call
  std::string tab_request_id;   // the tab's id, as JSON
  std::string message;          // the request as the router passed it on
};
struct RoundDecision {
  // The answer for the agent: input_required, or -32021 when it can be
  // asked none of them and one needed a capability it lacks (then the call
  // is cancelled); none when the round was answered without asking.
  std::optional<HttpReply> reply;
  bool cancel_call = false;
  // Refusals for the tab (requests the agent did not declare it can
  // answer) and answers it had given already, as AgentReply effects.
  std::vector<SessionEffect> to_tab;
};

// A GET that opens the session's stream.
struct StreamPlan {
  std::string session;
};

// The agent side of MCP, both eras (the 2025 revisions here and in
// mcp_forward.cc, 2026-07-28 in mcp_modern.cc), as plain logic: what to answer, or
// what to forward, for one request. No sockets, no RPCs; thread-safe (const).
class McpDispatcher {
 public:
  McpDispatcher(const SessionIdSigner& signer, const CatalogueFile& catalogue,
                const EndedSessions& ended, DispatchOptions options)
      : signer_(signer), catalogue_(catalogue), ended_(ended), options_(std::move(options)),
        states_(signer.secret()), token_key_(common::HmacSha256(signer.secret(), "relay token key v1")) {}

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

  // 2026-07-28: the tab asked the agent of a call these requests together.
  // plan.modern's round moves on.
  RoundDecision DecideRound(const std::string& account, ForwardPlan& plan,
                            const std::vector<RoundRequest>& requests, absl::Time now) const;
  // A 2026-07-28 call's message for the agent other than the tab's requests:
  // progress passes, log messages only from the level the request asked.
  bool PassesModern(const ForwardPlan& plan, absl::string_view message) const;
  // A 2026-07-28 agent's name at the router: a keyed hash of its bearer token
  // (the Authorization header's value), 32 hex digits.
  std::string TokenKey(absl::string_view authorization) const;

 private:
  std::optional<HttpReply> CheckVersionHeader(const std::optional<std::string>& version) const;
  // GET and DELETE of a 2026-07-28 client: 405 (the era has neither).
  std::optional<HttpReply> RefuseModernGetOrDelete(const AgentHeaders& headers) const;
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
  // The agent's progress token is replaced by one of the relay's, unique to
  // the call, so that the tab's progress finds its way back. params must be
  // an object whose "_meta" is an object holding "progressToken" (SealPlan
  // checks, without a parse).
  static void ReplaceProgressToken(nlohmann::json& params, ForwardPlan& plan);
  // The plan takes the request's params (the agent's text, rewritten only for a
  // progress token) and id, and is the decision.
  static void SealPlan(RpcMessage& message, ForwardPlan plan, PostDecision& decision);
  HttpReply Failure(const ForwardPlan& plan, int code, absl::string_view text) const;
  // The 2026-07-28 era (mcp_modern.cc).
  PostDecision DecideModern(const std::string& account, const AgentHeaders& headers,
                            RpcMessage message) const;
  HttpReply Discover(const nlohmann::json& id) const;
  std::string ServerCapabilities() const;

  const SessionIdSigner& signer_;
  const CatalogueFile& catalogue_;
  const EndedSessions& ended_;
  DispatchOptions options_;
  RequestStateSigner states_;
  common::HmacSha256Key token_key_;  // keys TokenKey
};

}  // namespace relay::gateway
