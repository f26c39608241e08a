#include "absl/strings/string_view.h"
#include "gateway/mcp_dispatcher.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace relay::gateway {
namespace {

constexpr std::array<absl::string_view, 3> kVersions = {"2025-11-25", "2025-06-18", "2025-03-26"};

bool IsSupportedVersion(absl::string_view version) {
  for (absl::string_view v : kVersions) {
    if (v == version) {
      return true;
    }
  }
  return false;
}

HttpReply Json(int status, std::string body) { return HttpReply{status, std::move(body), {}}; }

bool IsForwarded(absl::string_view method) {
  return method == "tools/call" || method == "resources/read" || method == "prompts/get" ||
         method == "completion/complete";
}

// Methods the relay answers itself; anything else is -32601.
bool IsKnownLocal(absl::string_view method) {
  return method == "ping" || method == "tools/list" || method == "resources/list" ||
         method == "resources/templates/list" || method == "prompts/list" ||
         method == "resources/subscribe" || method == "resources/unsubscribe" ||
         method == "logging/setLevel";
}

}  // namespace

std::optional<HttpReply> McpDispatcher::CheckVersionHeader(
    const std::optional<std::string>& version) const {
  // Lenient by design: any supported version is accepted, also one that
  // differs from what was negotiated (clients are known to be sloppy).
  if (!version || IsSupportedVersion(*version)) {
    return std::nullopt;
  }
  return Json(400, EncodeError(nullptr, kInvalidRequest,
                               absl::StrCat("Bad Request: unsupported MCP-Protocol-Version '",
                                            *version, "'; supported: ",
                                            absl::StrJoin(kVersions, ", "))));
}

std::optional<HttpReply> McpDispatcher::CheckSession(const std::string& account,
                                                     const std::optional<std::string>& session_id,
                                                     const nlohmann::json& id) const {
  if (!session_id) {
    return Json(400, EncodeError(id, kInvalidRequest,
                                 "Bad Request: Mcp-Session-Id header is required; "
                                 "send initialize first"));
  }
  auto owner = signer_.Verify(*session_id);
  // Another account's session is answered exactly like an unknown one.
  if (!owner.ok() || *owner != account) {
    return Json(404, EncodeError(id, -32001, "Session not found; initialize a new session"));
  }
  return std::nullopt;
}

HttpReply McpDispatcher::Initialize(const std::string& account, const RpcMessage& message) const {
  std::string version(kVersions.front());
  if (message.params.is_object()) {
    auto it = message.params.find("protocolVersion");
    if (it != message.params.end() && it->is_string() &&
        IsSupportedVersion(it->get_ref<const std::string&>())) {
      version = it->get<std::string>();
    }
  }
  nlohmann::json result = {
      {"protocolVersion", version},
      {"capabilities",
       {{"tools", {{"listChanged", true}}},
        {"resources", {{"subscribe", true}, {"listChanged", true}}},
        {"prompts", {{"listChanged", true}}},
        {"completions", nlohmann::json::object()},
        {"logging", nlohmann::json::object()}}},
      {"serverInfo", {{"name", options_.server_name}, {"version", options_.server_version}}},
  };
  HttpReply reply = Json(200, EncodeResult(message.id, DumpJson(result)));
  reply.session_id = signer_.Issue(account);
  return reply;
}

std::variant<HttpReply, ForwardPlan> McpDispatcher::HandlePost(const PostRequest& request) const {
  if (auto bad = CheckVersionHeader(request.protocol_version)) {
    return *std::move(bad);
  }
  auto decoded = DecodeMessage(request.body);
  if (auto* failure = std::get_if<RpcFailure>(&decoded)) {
    return Json(400, EncodeError(failure->id, failure->code, failure->message));
  }
  RpcMessage& message = std::get<RpcMessage>(decoded);

  if (message.kind == RpcMessage::Kind::kRequest && message.method == "initialize") {
    return Initialize(request.account, message);
  }
  bool known = message.kind != RpcMessage::Kind::kRequest || IsForwarded(message.method) ||
               IsKnownLocal(message.method);
  if (!known && !request.session_id) {
    // server/discover and other probes: -32601 at once, so that a client that
    // probes (Claude Code) falls back to initialize without waiting.
    return Json(400, EncodeError(message.id, kMethodNotFound,
                                 absl::StrCat("Method not found: ", message.method)));
  }
  if (auto bad = CheckSession(request.account, request.session_id, message.id)) {
    return *std::move(bad);
  }
  if (message.kind != RpcMessage::Kind::kRequest) {
    return Json(202, "");
  }
  const std::string& method = message.method;
  if (IsForwarded(method)) {
    ForwardPlan plan;
    plan.id = std::move(message.id);
    plan.is_tool_call = method == "tools/call";
    plan.request.account = request.account;
    plan.request.session_id = *request.session_id;
    plan.request.method = method;
    if (!message.params.is_null()) {
      plan.request.params = DumpJson(message.params);
    }
    return plan;
  }
  if (method == "ping" || method == "resources/subscribe" || method == "resources/unsubscribe" ||
      method == "logging/setLevel") {
    return Json(200, EncodeResult(message.id, "{}"));
  }
  std::shared_ptr<const Catalogue> catalogue = catalogue_.Get();
  if (method == "tools/list") {
    return Json(200, EncodeResult(message.id, absl::StrCat(R"({"tools":)", catalogue->tools, "}")));
  }
  if (method == "resources/list") {
    return Json(200, EncodeResult(message.id,
                                  absl::StrCat(R"({"resources":)", catalogue->resources, "}")));
  }
  if (method == "resources/templates/list") {
    return Json(200, EncodeResult(message.id, absl::StrCat(R"({"resourceTemplates":)",
                                                           catalogue->resource_templates, "}")));
  }
  if (method == "prompts/list") {
    return Json(200,
                EncodeResult(message.id, absl::StrCat(R"({"prompts":)", catalogue->prompts, "}")));
  }
  return Json(200, EncodeError(message.id, kMethodNotFound,
                               absl::StrCat("Method not found: ", method)));
}

HttpReply McpDispatcher::HandleDelete(const std::string& account,
                                      const std::optional<std::string>& session_id,
                                      const std::optional<std::string>& protocol_version) const {
  if (auto bad = CheckVersionHeader(protocol_version)) {
    return *std::move(bad);
  }
  if (auto bad = CheckSession(account, session_id, nullptr)) {
    return *std::move(bad);
  }
  return Json(204, "");
}

HttpReply McpDispatcher::Failure(const ForwardPlan& plan, int code, absl::string_view text) const {
  if (plan.is_tool_call) {
    // A tool error, not a protocol error: the model reads it and can tell the
    // person what to do.
    nlohmann::json result = {{"content", {{{"type", "text"}, {"text", text}}}}, {"isError", true}};
    return Json(200, EncodeResult(plan.id, DumpJson(result)));
  }
  return Json(200, EncodeError(plan.id, code, text));
}

HttpReply McpDispatcher::FinishForward(const ForwardPlan& plan, ForwardOutcome outcome) const {
  switch (outcome.kind) {
    case ForwardOutcome::Kind::kResult:
      return Json(200, EncodeResult(plan.id, outcome.payload));
    case ForwardOutcome::Kind::kError:
      return Json(200, EncodeRawError(plan.id, outcome.payload));
    case ForwardOutcome::Kind::kNoTab:
      return Failure(plan, kNoTab, options_.no_tab_message);
    case ForwardOutcome::Kind::kTabGone:
      return Failure(plan, kInternalError,
                     "The editor disconnected before it answered. Reopen the editor and try "
                     "again.");
    case ForwardOutcome::Kind::kDisplaced:
      return Failure(plan, kInternalError,
                     "The editor was replaced by another tab before it answered. Try again: the "
                     "new tab will answer.");
    case ForwardOutcome::Kind::kTimeout:
      return Failure(plan, kInternalError,
                     absl::StrCat("The editor did not answer in time (",
                                  absl::FormatDuration(options_.call_timeout),
                                  "). The request was cancelled."));
    case ForwardOutcome::Kind::kCancelled:
      return Failure(plan, kInternalError, "The request was cancelled.");
    case ForwardOutcome::Kind::kRouterUnavailable:
      return Failure(plan, kInternalError,
                     "The relay is restarting and could not reach the editor. Try again in a "
                     "moment.");
  }
  return Failure(plan, kInternalError, "internal error");
}

}  // namespace relay::gateway
