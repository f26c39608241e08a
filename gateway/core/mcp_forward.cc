// McpDispatcher, the forwarded half: what a forwarded call carries (its plan
// sealed, the progress token replaced, names the agent's role may not use
// refused), how its outcome is answered, what a tab's request is told when the agent cannot receive it, and
// the agent's own progress token put back on the tab's progress.
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/crypto.h"
#include "gateway/core/mcp_dispatcher.h"

namespace relay::gateway {

namespace {

// A result as the agent's era wants it: 2026-07-28 results say what they are
// (resultType), and reads say how long they may be kept.
std::string ResultFor(const ForwardPlan& plan, std::string result) {
  if (!plan.modern) {
    return result;
  }
  return CompleteResult(result, plan.request.method == "resources/read"
                                    ? R"("ttlMs":0,"cacheScope":"private")"
                                    : "");
}

}  // namespace

HttpReply McpDispatcher::Failure(const ForwardPlan& plan, int code, absl::string_view text) const {
  if (plan.is_tool_call) {
    // A tool error, not a protocol error: the model reads it and can tell the
    // person what to do.
    nlohmann::json result = {{"content", {{{"type", "text"}, {"text", text}}}}, {"isError", true}};
    return JsonReply(200, EncodeResult(plan.id, ResultFor(plan, DumpJson(result))));
  }
  return JsonReply(200, EncodeError(plan.id, code, text));
}

HttpReply McpDispatcher::FinishForward(const ForwardPlan& plan, ForwardOutcome outcome) const {
  switch (outcome.kind) {
    case ForwardOutcome::Kind::kResult:
      if (!outcome.view_line.empty()) {
        // The view changed since this session's last tool result: say so once.
        auto result = nlohmann::json::parse(outcome.payload, nullptr, false);
        if (result.is_object() && result.contains("content") && result["content"].is_array()) {
          result["content"].push_back({{"type", "text"}, {"text", outcome.view_line}});
          return JsonReply(200, EncodeResult(plan.id, ResultFor(plan, DumpJson(result))));
        }
      }
      return JsonReply(200, EncodeResult(plan.id, ResultFor(plan, std::move(outcome.payload))));
    case ForwardOutcome::Kind::kError:
      return JsonReply(200, EncodeRawError(plan.id, outcome.payload));
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
    case ForwardOutcome::Kind::kRouterUnavailable: {
      constexpr absl::string_view kRestarting =
          "The relay is restarting and could not reach the editor. Try again in a moment.";
      if (plan.is_tool_call) {
        return Failure(plan, kInternalError, kRestarting);
      }
      return JsonReply(503, EncodeError(plan.id, kInternalError, kRestarting));
    }
    case ForwardOutcome::Kind::kSessionEnded:
      return JsonReply(404, EncodeError(plan.id, -32001, "Session not found; initialize a new session"));
    case ForwardOutcome::Kind::kShuttingDown:
      return Failure(plan, kInternalError,
                     "The relay's gateway shut down before the editor answered. Try again: "
                     "another gateway will take the call.");
    case ForwardOutcome::Kind::kNotPending:
      return JsonReply(400, EncodeError(plan.id, kInvalidParams,
                                        "Invalid params: the call this requestState belongs to is "
                                        "no longer waiting (it ended, expired, or another retry "
                                        "resumed it); call again without requestState"));
    case ForwardOutcome::Kind::kInputRequired:
      return Failure(plan, kInternalError, "internal error");
    case ForwardOutcome::Kind::kTooManyCalls:
      return Failure(plan, kInternalError,
                     "Too many requests are waiting for the editor of this account. Wait for "
                     "some of them to finish, then try again.");
  }
  return Failure(plan, kInternalError, "internal error");
}

SessionEffect McpDispatcher::RefuseTabRequest(absl::string_view message) const {
  SessionEffect effect;
  if (!absl::StrContains(message, kTabRequestIdPrefix)) {
    return effect;  // a notification: nothing to answer
  }
  auto parsed = nlohmann::json::parse(message, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object() || !parsed.contains("method") || !parsed.contains("id") ||
      !ParseAgentReplyId(parsed["id"], &effect.call_id, &effect.tab_request_id)) {
    return effect;
  }
  effect.kind = SessionEffect::Kind::kAgentReply;
  effect.is_error = true;
  effect.payload = EncodeErrorObject(
      kInternalError,
      "the agent's client cannot receive requests during this call: it does not accept "
      "text/event-stream, or the call was batched");
  return effect;
}

std::string McpDispatcher::AgentEvent(const ForwardPlan& plan, std::string message) const {
  if (plan.agent_progress_token.is_null() ||
      message.find("notifications/progress") == std::string::npos) {
    return message;
  }
  auto parsed = nlohmann::json::parse(message, nullptr, false);
  if (!parsed.is_object() || parsed.value("method", "") != "notifications/progress" ||
      !parsed.contains("params") || !parsed["params"].is_object()) {
    return message;
  }
  parsed["params"]["progressToken"] = plan.agent_progress_token;
  return DumpJson(parsed);
}

void McpDispatcher::SealPlan(RpcMessage& message, ForwardPlan plan, PostDecision& decision) {
  // Most calls carry no progress token: their params go on as the agent's
  // text, unparsed.
  if (message.params.ObjectOf("_meta").KindOf("progressToken")) {
    ReplaceProgressToken(message.params.mutable_value(), plan);
  }
  plan.request.params = std::move(message.params).text();
  plan.id = std::move(message.id);
  decision.action = std::move(plan);
}

void McpDispatcher::ReplaceProgressToken(nlohmann::json& params, ForwardPlan& plan) {
  nlohmann::json& meta = params["_meta"];
  plan.agent_progress_token = meta["progressToken"];
  plan.request.progress_token = absl::StrCat("relay-", common::HexEncode(common::RandomBytes(12)));
  meta["progressToken"] = plan.request.progress_token;
}

std::optional<HttpReply> McpDispatcher::RefuseHidden(const RpcMessage& message,
                                                     absl::string_view role) const {
  std::shared_ptr<const Catalogue> catalogue = catalogue_.Get();
  using Kind = Catalogue::Kind;
  auto refuse = [&](int code, std::string text) {
    return JsonReply(200, EncodeError(message.id, code, text));
  };
  const std::string& method = message.method;
  // A name or URI that is there but not a string names nothing the catalogue
  // could hide; a tab must not be left to read it as one.
  auto not_a_string = [](const LazyJson& object, absl::string_view key) {
    std::optional<char> kind = object.KindOf(key);
    return kind && *kind != '"';
  };
  const LazyJson& params = message.params;
  const LazyJson ref = params.KindOf("ref") ? params.ObjectOf("ref") : LazyJson();
  if (not_a_string(params, "name") || not_a_string(params, "uri") ||
      (params.KindOf("ref") && (not_a_string(ref, "name") || not_a_string(ref, "uri")))) {
    return refuse(kInvalidParams, "params.name, params.uri and params.ref's must be strings");
  }
  if (method == "tools/call") {
    std::optional<std::string> name = params.StringOf("name");
    if (name && catalogue->Hides(Kind::kTool, role, *name)) {
      return refuse(kInvalidParams, absl::StrCat("Unknown tool: ", *name));
    }
  } else if (method == "prompts/get") {
    std::optional<std::string> name = params.StringOf("name");
    if (name && catalogue->Hides(Kind::kPrompt, role, *name)) {
      return refuse(kInvalidParams, absl::StrCat("Unknown prompt: ", *name));
    }
  } else if (method == "resources/read") {
    std::optional<std::string> uri = params.StringOf("uri");
    if (uri && catalogue->Hides(Kind::kResource, role, *uri)) {
      return JsonReply(200, EncodeResourceNotFound(message.id, *uri));
    }
  } else if (method == "completion/complete") {
    std::optional<std::string> name = ref.StringOf("name");
    std::optional<std::string> uri = ref.StringOf("uri");
    if ((name && catalogue->Hides(Kind::kPrompt, role, *name)) ||
        (uri && catalogue->Hides(Kind::kResource, role, *uri))) {
      return refuse(kInvalidParams, "Unknown reference");
    }
  }
  return std::nullopt;
}

}  // namespace relay::gateway
