#include "gateway/core/mcp_dispatcher.h"

#include <array>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/crypto.h"

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

std::string BatchAnswerTooLarge(const nlohmann::json& id, size_t room) {
  return EncodeError(id, kInternalError,
                     absl::StrCat("the answers of this batch would pass ", room,
                                  " bytes; send this request alone or with fewer others"));
}

namespace {

bool IsLogLevel(absl::string_view level) {
  for (absl::string_view name :
       {"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}) {
    if (level == name) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::optional<HttpReply> McpDispatcher::CheckVersionHeader(
    const std::optional<std::string>& version) const {
  // Lenient by design: any supported version is accepted, also one that
  // differs from what was negotiated (clients are known to be sloppy).
  if (!version || IsSupportedVersion(*version)) {
    return std::nullopt;
  }
  return JsonReply(400, EncodeError(nullptr, kInvalidRequest,
                               absl::StrCat("Bad Request: unsupported MCP-Protocol-Version '",
                                            *version, "'; supported: ",
                                            absl::StrJoin(kVersions, ", "))));
}

std::optional<HttpReply> McpDispatcher::CheckSession(const std::string& account,
                                                     const std::optional<std::string>& session_id,
                                                     const nlohmann::json& id) const {
  if (!session_id) {
    return JsonReply(400, EncodeError(id, kInvalidRequest,
                                 "Bad Request: Mcp-Session-Id header is required; "
                                 "send initialize first"));
  }
  auto owner = signer_.Verify(*session_id);
  // Another account's session is answered exactly like an unknown one.
  if (!owner.ok() || *owner != account || ended_.Contains(*session_id)) {
    return JsonReply(404, EncodeError(id, -32001, "Session not found; initialize a new session"));
  }
  return std::nullopt;
}

HttpReply McpDispatcher::Initialize(const std::string& account, const RpcMessage& message,
                                    std::string* session) const {
  std::string version(kVersions.front());
  if (std::optional<std::string> asked = message.params.StringOf("protocolVersion");
      asked && IsSupportedVersion(*asked)) {
    version = *asked;
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
  HttpReply reply = JsonReply(200, EncodeResult(message.id, DumpJson(result)));
  reply.session_id = signer_.Issue(account);
  *session = reply.session_id;
  return reply;
}

PostDecision McpDispatcher::HandlePost(const std::string& account, const AgentHeaders& headers,
                                       absl::string_view body) const {
  PostDecision decision;
  // Without the modern era, a bad version header is refused before the body
  // is read; with it, the body tells which era's rules apply (Decide).
  if (!options_.modern_era) {
    if (auto bad = CheckVersionHeader(headers.protocol_version)) {
      decision.action = *std::move(bad);
      return decision;
    }
  }
  size_t first = body.find_first_not_of(" \t\r\n");
  if (first != absl::string_view::npos && body[first] == '[') {
    // A batch is parsed whole, recursively: its depth is checked first.
    if (NestsDeeperThan(body, options_.max_json_depth)) {
      RpcFailure failure = TooDeep(body, options_.max_json_depth);
      decision.action = JsonReply(400, EncodeError(failure.id, failure.code, failure.message));
      return decision;
    }
    nlohmann::json batch = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (batch.is_discarded()) {
      decision.action = JsonReply(400, EncodeError(nullptr, kParseError,
                                              "Parse error: the body is not valid JSON"));
      return decision;
    }
    return HandleBatch(account, headers, std::move(batch));
  }
  auto decoded = DecodeMessage(body, options_.max_json_depth);
  if (auto* failure = std::get_if<RpcFailure>(&decoded)) {
    decision.action = JsonReply(400, EncodeError(failure->id, failure->code, failure->message));
    return decision;
  }
  return HandleMessage(account, headers, std::get<RpcMessage>(std::move(decoded)));
}

PostDecision McpDispatcher::HandleBatch(const std::string& account, const AgentHeaders& headers,
                                        nlohmann::json batch) const {
  PostDecision decision;
  if (auto bad = CheckVersionHeader(headers.protocol_version)) {
    decision.action = *std::move(bad);
    return decision;
  }
  // Batches exist only in 2025-03-26, which is also what a request without
  // the version header is taken to speak.
  if (headers.protocol_version && *headers.protocol_version != "2025-03-26") {
    decision.action = JsonReply(400, EncodeError(nullptr, kInvalidRequest,
                                            "Bad Request: JSON-RPC batches are only allowed under "
                                            "protocol version 2025-03-26"));
    return decision;
  }
  if (batch.empty()) {
    decision.action =
        JsonReply(400, EncodeError(nullptr, kInvalidRequest, "Invalid Request: empty batch"));
    return decision;
  }
  if (batch.size() > options_.max_batch_messages) {
    decision.action = JsonReply(
        400, EncodeError(nullptr, kInvalidRequest,
                         absl::StrCat("Invalid Request: a batch may hold at most ",
                                      options_.max_batch_messages, " messages; send fewer")));
    return decision;
  }
  size_t answer_bytes = 0;  // of the answers made here; the router's are bounded as they come
  for (nlohmann::json& item : batch) {
    auto decoded = DecodeValue(std::move(item));
    if (auto* failure = std::get_if<RpcFailure>(&decoded)) {
      PostDecision bad;
      bad.action = JsonReply(200, EncodeError(failure->id, failure->code, failure->message));
      decision.batch.push_back(std::move(bad));
      continue;
    }
    RpcMessage& message = std::get<RpcMessage>(decoded);
    if (options_.modern_era && IsModern(headers.protocol_version, message)) {
      PostDecision bad;
      bad.action = JsonReply(200, EncodeError(message.id, kInvalidRequest,
                                              "Invalid Request: 2026-07-28 requests cannot be "
                                              "batched; send each on its own"));
      decision.batch.push_back(std::move(bad));
      continue;
    }
    if (message.kind == RpcMessage::Kind::kRequest && message.method == "initialize") {
      PostDecision bad;
      bad.action = JsonReply(200, EncodeError(message.id, kInvalidRequest,
                                         "Invalid Request: initialize cannot be batched"));
      decision.batch.push_back(std::move(bad));
      continue;
    }
    nlohmann::json id = message.id;
    PostDecision decided = HandleMessage(account, headers, std::move(message));
    if (auto* reply = std::get_if<HttpReply>(&decided.action)) {
      if (answer_bytes + reply->body.size() > options_.max_batch_answer_bytes) {
        reply->body = BatchAnswerTooLarge(id, options_.max_batch_answer_bytes);
      }
      answer_bytes += reply->body.size() + 1;
    }
    decision.batch.push_back(std::move(decided));
  }
  return decision;
}

PostDecision McpDispatcher::HandleMessage(const std::string& account,
                                          const AgentHeaders& headers,
                                          RpcMessage message) const {
  size_t label = kMcpMethodLabelCount - 1;
  if (message.kind == RpcMessage::Kind::kNotification) {
    label = kMcpMethodLabelCount - 3;
  } else if (message.kind == RpcMessage::Kind::kResponse) {
    label = kMcpMethodLabelCount - 2;
  } else {
    for (size_t i = 0; i + 3 < kMcpMethodLabelCount; ++i) {
      if (message.method == kMcpMethodLabels[i]) {
        label = i;
        break;
      }
    }
  }
  PostDecision decision = Decide(account, headers, std::move(message));
  decision.method_label = label;
  return decision;
}

PostDecision McpDispatcher::Decide(const std::string& account, const AgentHeaders& headers,
                                   RpcMessage message) const {
  if (options_.modern_era && IsModern(headers.protocol_version, message)) {
    return DecideModern(account, headers, std::move(message));
  }
  PostDecision decision;
  if (auto bad = CheckVersionHeader(headers.protocol_version)) {
    decision.action = *std::move(bad);
    return decision;
  }
  if (message.kind == RpcMessage::Kind::kRequest && message.method == "initialize") {
    decision.action = Initialize(account, message, &decision.session);
    decision.new_session = true;
    return decision;
  }
  bool known = message.kind != RpcMessage::Kind::kRequest || IsForwarded(message.method) ||
               IsKnownLocal(message.method);
  if (!known && !headers.session_id) {
    // server/discover and other probes: -32601 at once, so that a client that
    // probes (Claude Code) falls back to initialize without waiting.
    decision.action = JsonReply(400, EncodeError(message.id, kMethodNotFound,
                                            absl::StrCat("Method not found: ", message.method)));
    return decision;
  }
  if (auto bad = CheckSession(account, headers.session_id, message.id)) {
    decision.action = *std::move(bad);
    return decision;
  }
  decision.session = *headers.session_id;
  SessionEffect& effect = decision.effect;

  if (message.kind == RpcMessage::Kind::kResponse) {
    // An answer to a tab's request (sampling, elicitation, roots).
    if (ParseAgentReplyId(message.id, &effect.call_id, &effect.tab_request_id)) {
      effect.kind = SessionEffect::Kind::kAgentReply;
      effect.is_error = message.is_error;
      effect.payload = std::move(message.payload);
    }
    decision.action = JsonReply(202, "");
    return decision;
  }
  if (message.kind == RpcMessage::Kind::kNotification) {
    if (message.method == "notifications/cancelled" && message.params.KindOf("requestId")) {
      effect.kind = SessionEffect::Kind::kAgentCancel;
      effect.value = DumpJson(message.params.value()["requestId"]);
      if (std::optional<std::string> reason = message.params.StringOf("reason")) {
        effect.reason = *reason;
      }
    }
    decision.action = JsonReply(202, "");
    return decision;
  }

  const std::string& method = message.method;
  if (IsForwarded(method)) {
    if (auto hidden = RefuseHidden(message, headers.role)) {
      decision.action = *std::move(hidden);
      return decision;
    }
    ForwardPlan plan;
    plan.is_tool_call = method == "tools/call";
    plan.request.account = account;
    plan.request.session_id = decision.session;
    plan.request.method = method;
    plan.request.request_id = DumpJson(message.id);
    SealPlan(message, std::move(plan), decision);
    return decision;
  }
  if (method == "resources/subscribe" || method == "resources/unsubscribe") {
    std::optional<std::string> uri = message.params.StringOf("uri");
    if (!uri) {
      decision.action = JsonReply(200, EncodeError(message.id, kInvalidParams, "params.uri is required"));
      return decision;
    }
    // A hidden resource is answered as an unknown one is (the router accepts
    // any URI): it is simply never subscribed, so no update of it arrives.
    if (!catalogue_.Get()->Hides(Catalogue::Kind::kResource, headers.role, *uri)) {
      effect.kind = method == "resources/subscribe" ? SessionEffect::Kind::kSubscribe
                                                    : SessionEffect::Kind::kUnsubscribe;
      effect.value = *uri;
    }
    decision.action = JsonReply(200, EncodeResult(message.id, "{}"));
    return decision;
  }
  if (method == "logging/setLevel") {
    std::optional<std::string> level = message.params.StringOf("level");
    if (!level || !IsLogLevel(*level)) {
      decision.action = JsonReply(200, EncodeError(message.id, kInvalidParams,
                                              "params.level must be an RFC 5424 level name"));
      return decision;
    }
    effect.kind = SessionEffect::Kind::kLogLevel;
    effect.value = *level;
    decision.action = JsonReply(200, EncodeResult(message.id, "{}"));
    return decision;
  }
  if (method == "ping") {
    decision.action = JsonReply(200, EncodeResult(message.id, "{}"));
    return decision;
  }
  std::shared_ptr<const Catalogue> catalogue = catalogue_.Get();
  const CatalogueView& view = catalogue->View(headers.role);
  const std::string* list = nullptr;
  absl::string_view member;
  if (method == "tools/list") {
    list = &view.tools;
    member = "tools";
  } else if (method == "resources/list") {
    list = &view.resources;
    member = "resources";
  } else if (method == "resources/templates/list") {
    list = &view.resource_templates;
    member = "resourceTemplates";
  } else if (method == "prompts/list") {
    list = &view.prompts;
    member = "prompts";
  }
  if (list != nullptr) {
    decision.action =
        JsonReply(200, EncodeResult(message.id, absl::StrCat(R"({")", member, R"(":)", *list, "}")));
    return decision;
  }
  decision.action = JsonReply(200, EncodeError(message.id, kMethodNotFound,
                                          absl::StrCat("Method not found: ", method)));
  return decision;
}

std::optional<HttpReply> McpDispatcher::RefuseModernGetOrDelete(const AgentHeaders& headers) const {
  if (!options_.modern_era || headers.protocol_version != kModernVersion) {
    return std::nullopt;
  }
  HttpReply reply = JsonReply(405, EncodeError(nullptr, kInvalidRequest,
                                               "Method Not Allowed: 2026-07-28 has no sessions "
                                               "and no GET stream; POST subscriptions/listen for "
                                               "notifications"));
  reply.allow = "POST";
  return reply;
}

std::variant<HttpReply, StreamPlan> McpDispatcher::HandleGet(const std::string& account,
                                                             const AgentHeaders& headers) const {
  if (auto modern = RefuseModernGetOrDelete(headers)) {
    return *std::move(modern);
  }
  if (auto bad = CheckVersionHeader(headers.protocol_version)) {
    return *std::move(bad);
  }
  if (!headers.accepts_sse) {
    return JsonReply(406, EncodeError(nullptr, kInvalidRequest,
                                 "Not Acceptable: GET opens an event stream; send "
                                 "Accept: text/event-stream"));
  }
  if (auto bad = CheckSession(account, headers.session_id, nullptr)) {
    return *std::move(bad);
  }
  return StreamPlan{*headers.session_id};
}

HttpReply McpDispatcher::HandleDelete(const std::string& account,
                                      const AgentHeaders& headers) const {
  if (auto modern = RefuseModernGetOrDelete(headers)) {
    return *std::move(modern);
  }
  if (auto bad = CheckVersionHeader(headers.protocol_version)) {
    return *std::move(bad);
  }
  if (auto bad = CheckSession(account, headers.session_id, nullptr)) {
    return *std::move(bad);
  }
  return JsonReply(204, "");
}

}  // namespace relay::gateway
