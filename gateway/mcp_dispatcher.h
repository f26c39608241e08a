#pragma once

#include "absl/strings/string_view.h"
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "absl/time/time.h"
#include "gateway/catalogue.h"
#include "gateway/jsonrpc.h"
#include "gateway/router_client.h"
#include "gateway/session_id.h"

namespace relay::gateway {

inline constexpr absl::string_view kDefaultNoTabMessage =
    "No editor is connected for your account. Open the editor and switch the agent on in the "
    "account menu.";

struct DispatchOptions {
  std::string no_tab_message = std::string(kDefaultNoTabMessage);
  absl::Duration call_timeout = absl::Seconds(30);
  std::string server_name = "mcp-tab-relay";
  std::string server_version = "0.1.0";
};

// An agent's POST after its bearer was verified.
struct PostRequest {
  std::string account;
  std::optional<std::string> session_id;        // Mcp-Session-Id header
  std::optional<std::string> protocol_version;  // MCP-Protocol-Version header
  absl::string_view body;
};

// An HTTP answer the gateway gives without asking anyone.
struct HttpReply {
  int status = 200;
  std::string body;        // JSON; empty means no body
  std::string session_id;  // when set, sent as Mcp-Session-Id
};

// A request that the account's tab must answer.
struct ForwardPlan {
  nlohmann::json id;  // the agent's id, restored on the answer
  bool is_tool_call = false;
  ForwardRequest request;
};

// The agent side of MCP (2025 revisions) as plain logic: what to answer, or
// what to forward, for one request. No sockets, no RPCs; thread-safe (const).
class McpDispatcher {
 public:
  McpDispatcher(const SessionIdSigner& signer, const CatalogueFile& catalogue,
                DispatchOptions options)
      : signer_(signer), catalogue_(catalogue), options_(std::move(options)) {}

  std::variant<HttpReply, ForwardPlan> HandlePost(const PostRequest& request) const;

  // DELETE: ends the session (204), or 400/404 as for a POST.
  HttpReply HandleDelete(const std::string& account, const std::optional<std::string>& session_id,
                         const std::optional<std::string>& protocol_version) const;

  // The agent's answer once the forwarded call ended.
  HttpReply FinishForward(const ForwardPlan& plan, ForwardOutcome outcome) const;

  const DispatchOptions& options() const { return options_; }

 private:
  std::optional<HttpReply> CheckVersionHeader(const std::optional<std::string>& version) const;
  // 400 without a session id, 404 for a bad one or another account's.
  std::optional<HttpReply> CheckSession(const std::string& account,
                                        const std::optional<std::string>& session_id,
                                        const nlohmann::json& id) const;
  HttpReply Initialize(const std::string& account, const RpcMessage& message) const;
  HttpReply Failure(const ForwardPlan& plan, int code, absl::string_view text) const;

  const SessionIdSigner& signer_;
  const CatalogueFile& catalogue_;
  DispatchOptions options_;
};

}  // namespace relay::gateway
