// McpDispatcher, the 2026-07-28 half: server/discover, stateless requests
// (the envelope checked once by CheckModern), results with resultType and
// caching fields, and multi round-trip requests: a tab's requests to the
// agent become input_required rounds with a signed requestState, and the
// retry, on any gateway, resumes the call that waits in the tab.
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/crypto.h"
#include "gateway/core/mcp_dispatcher.h"

namespace relay::gateway {
namespace {

// Lists and reads follow the person's editor and the catalogue file, which
// change at any moment: clients may keep them, but must ask again.
constexpr absl::string_view kPrivateNoCache = R"("ttlMs":0,"cacheScope":"private")";
// Resources one listen stream may follow (the router keeps as many per session).
constexpr size_t kMaxListenUris = 1000;

bool IsForwardedModern(absl::string_view method) {
  return method == "tools/call" || method == "resources/read" || method == "prompts/get" ||
         method == "completion/complete";
}

std::string ErrorWithData(const nlohmann::json& id, int code, absl::string_view message,
                          const nlohmann::json& data) {
  nlohmann::json error = {{"code", code}, {"message", message}};
  if (!data.is_null()) {
    error["data"] = data;
  }
  return EncodeRawError(id, DumpJson(error));
}

// The key an agent sees for a tab's request: the tab's id itself when it is
// a string, else its JSON text (a number).
std::string DisplayKey(const std::string& tab_request_id) {
  auto id = nlohmann::json::parse(tab_request_id, nullptr, /*allow_exceptions=*/false);
  return id.is_string() ? id.get<std::string>() : tab_request_id;
}

// The capability an agent must have declared to be asked method.
const char* CapabilityFor(absl::string_view method) {
  if (method == "elicitation/create") return "elicitation";
  if (method == "sampling/createMessage") return "sampling";
  if (method == "roots/list") return "roots";
  return nullptr;
}

bool Declared(const ClientCapabilities& caps, absl::string_view capability) {
  return (capability == "elicitation" && caps.elicitation) ||
         (capability == "sampling" && caps.sampling) || (capability == "roots" && caps.roots);
}

// inputResponses must map keys to result objects.
bool ValidAnswers(const nlohmann::json& answers) {
  if (!answers.is_object()) {
    return false;
  }
  for (const auto& [key, value] : answers.items()) {
    if (!value.is_object()) {
      return false;
    }
  }
  return true;
}

}  // namespace

// Change notices and resource updates reach a 2026-07-28 agent on its
// subscriptions/listen streams.
std::string McpDispatcher::ServerCapabilities() const {
  return R"({"tools":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},)"
         R"("prompts":{"listChanged":true},"completions":{},"logging":{}})";
}

HttpReply McpDispatcher::Discover(const nlohmann::json& id) const {
  nlohmann::json result = {
      {"supportedVersions", SupportedVersions()},
      {"capabilities", nlohmann::json::parse(ServerCapabilities())},
      {"serverInfo", {{"name", options_.server_name}, {"version", options_.server_version}}},
      {"_meta",
       {{std::string(kMetaServerInfo),
         {{"name", options_.server_name}, {"version", options_.server_version}}}}},
      {"resultType", "complete"},
      // The same for everyone, and it changes only with a new release.
      {"ttlMs", 60000},
      {"cacheScope", "public"},
  };
  return JsonReply(200, EncodeResult(id, DumpJson(result)));
}

PostDecision McpDispatcher::DecideModern(const std::string& account, const AgentHeaders& headers,
                                         RpcMessage message) const {
  PostDecision decision;
  if (message.kind != RpcMessage::Kind::kRequest) {
    // No session and no requests of the server: nothing to act on.
    decision.action = JsonReply(202, "");
    return decision;
  }
  auto checked = CheckModern(
      ModernHeaders{headers.protocol_version, headers.mcp_method, headers.mcp_name}, message);
  if (auto* refusal = std::get_if<ModernRefusal>(&checked)) {
    decision.action = JsonReply(
        refusal->status, ErrorWithData(message.id, refusal->code, refusal->message, refusal->data));
    return decision;
  }
  const ModernRequest& modern = std::get<ModernRequest>(checked);
  const std::string& method = message.method;
  auto not_found = [&] {
    return JsonReply(404, EncodeError(message.id, kMethodNotFound,
                                      absl::StrCat("Method not found: ", method)));
  };
  if (method == "server/discover") {
    decision.action = Discover(message.id);
    return decision;
  }
  // The agent is known by its token: a request of it counts it as connected.
  if (!headers.token_key.empty()) {
    decision.session = absl::StrCat("t.", headers.token_key);
  }
  if (method == "tools/list" || method == "resources/list" ||
      method == "resources/templates/list" || method == "prompts/list") {
    const CatalogueView& view = catalogue_.Get()->View(headers.role);
    std::pair<const std::string*, absl::string_view> list =
        method == "tools/list"       ? std::make_pair(&view.tools, "tools")
        : method == "resources/list" ? std::make_pair(&view.resources, "resources")
        : method == "prompts/list"   ? std::make_pair(&view.prompts, "prompts")
                                     : std::make_pair(&view.resource_templates, "resourceTemplates");
    decision.action = JsonReply(
        200, EncodeResult(message.id, absl::StrCat(R"({")", list.second, R"(":)", *list.first,
                                                   R"(,"resultType":"complete",)",
                                                   kPrivateNoCache, "}")));
    return decision;
  }
  if (method == "subscriptions/listen") {
    if (!headers.accepts_sse) {
      decision.action = JsonReply(406, EncodeError(message.id, kInvalidRequest,
                                                   "Not Acceptable: subscriptions/listen answers "
                                                   "with an event stream; send Accept: "
                                                   "text/event-stream"));
      return decision;
    }
    auto filter = ListenFilter::Parse(message.id, message.params, kMaxListenUris);
    if (auto* error = std::get_if<std::string>(&filter)) {
      decision.action = JsonReply(400, EncodeError(message.id, kInvalidParams, *error));
      return decision;
    }
    std::shared_ptr<const Catalogue> catalogue = catalogue_.Get();
    for (const std::string& uri : std::get<ListenFilter>(filter).uris()) {
      if (catalogue->Hides(Catalogue::Kind::kResource, headers.role, uri)) {
        decision.action = JsonReply(
            400, EncodeError(message.id, kResourceNotFound, absl::StrCat("Resource not found: ", uri)));
        return decision;
      }
    }
    decision.action = ListenPlan{std::get<ListenFilter>(std::move(filter))};
    return decision;
  }
  if (!IsForwardedModern(method)) {
    // initialize, ping, logging/setLevel, resources/(un)subscribe are of the
    // 2025 era only.
    decision.action = not_found();
    return decision;
  }
  if (auto hidden = RefuseHidden(message, headers.role)) {
    decision.action = *std::move(hidden);
    return decision;
  }
  auto invalid = [&](absl::string_view text) {
    decision.action = JsonReply(400, EncodeError(message.id, kInvalidParams, text));
    return decision;
  };
  ForwardPlan plan;
  plan.modern.emplace();
  plan.modern->capabilities = modern.capabilities;
  plan.modern->log_rank = modern.log_rank;
  plan.is_tool_call = method == "tools/call";
  plan.request.account = account;
  plan.request.session_id = decision.session;
  plan.request.method = method;
  plan.request.stateless = true;
  plan.request.request_id = DumpJson(message.id);
  nlohmann::json answers = nullptr;
  if (message.params.is_object()) {
    if (auto it = message.params.find("inputResponses"); it != message.params.end()) {
      answers = std::move(*it);
      message.params.erase(it);
      if (!ValidAnswers(answers)) {
        return invalid(
            "Invalid params: inputResponses must map each key of the inputRequests to the "
            "result object of that request");
      }
    }
    if (auto it = message.params.find("requestState"); it != message.params.end()) {
      auto state = it->is_string()
                       ? states_.Verify(it->get_ref<const std::string&>(), absl::Now())
                       : absl::InvalidArgumentError("not a string");
      // Another account's state is refused exactly like a forged one.
      if (!state.ok() || state->account != account) {
        return invalid(
            "Invalid params: requestState is not one this relay gave for this account's call, "
            "or it has expired; call again without requestState and inputResponses");
      }
      message.params.erase(it);
      plan.request.resume_call_id = state->call_id;
      plan.modern->round = state->round;
      for (const std::string& key : state->keys) {
        if (answers.is_object()) {
          if (auto answer = answers.find(DisplayKey(key)); answer != answers.end()) {
            plan.request.answers.emplace_back(key, DumpJson(*answer));
          }
        }
      }
    } else if (answers.is_object()) {
      plan.modern->early_answers = std::move(answers);
    }
    ReplaceProgressToken(message.params, plan);
  }
  if (!message.params.is_null()) {
    plan.request.params = DumpJson(message.params);
  }
  plan.id = std::move(message.id);
  decision.action = std::move(plan);
  return decision;
}

RoundDecision McpDispatcher::DecideRound(const std::string& account, ForwardPlan& plan,
                                         const std::vector<RoundRequest>& requests,
                                         absl::Time now) const {
  RoundDecision decision;
  ModernCall& modern = *plan.modern;
  nlohmann::json input_requests = nlohmann::json::object();
  nlohmann::json missing = nlohmann::json::object();
  RequestState state;
  auto to_tab = [&](const RoundRequest& request, bool is_error, std::string payload) {
    SessionEffect effect;
    effect.kind = SessionEffect::Kind::kAgentReply;
    effect.call_id = request.call_id;
    effect.tab_request_id = request.tab_request_id;
    effect.is_error = is_error;
    effect.payload = std::move(payload);
    decision.to_tab.push_back(std::move(effect));
  };
  for (const RoundRequest& request : requests) {
    state.call_id = request.call_id;
    auto parsed = nlohmann::json::parse(request.message, nullptr, /*allow_exceptions=*/false);
    std::string method = parsed.is_object() ? parsed.value("method", "") : "";
    const char* capability = CapabilityFor(method);
    std::string key = DisplayKey(request.tab_request_id);
    if (input_requests.contains(key)) {
      key = request.tab_request_id;  // "5" and 5: told apart by their JSON
    }
    if (auto early = modern.early_answers.find(key); early != modern.early_answers.end()) {
      to_tab(request, false, DumpJson(*early));
      modern.early_answers.erase(early);
      continue;
    }
    if (capability == nullptr || !Declared(modern.capabilities, capability)) {
      // Only what the agent declared it can answer is asked.
      if (capability != nullptr) {
        missing[capability] = nlohmann::json::object();
      }
      nlohmann::json error = {
          {"code", kMissingClientCapability},
          {"message", absl::StrCat("the agent did not declare the ",
                                   capability == nullptr ? method : capability,
                                   " capability: it cannot be asked this")}};
      to_tab(request, true, DumpJson(error));
      continue;
    }
    nlohmann::json params = parsed.contains("params") ? std::move(parsed["params"])
                                                      : nlohmann::json::object();
    input_requests[key] = {{"method", method}, {"params", std::move(params)}};
    state.keys.push_back(request.tab_request_id);
  }
  if (!input_requests.empty()) {
    state.account = account;
    state.round = ++modern.round;
    state.expires = now + options_.call_timeout;
    nlohmann::json result = {{"resultType", "input_required"},
                             {"inputRequests", std::move(input_requests)},
                             {"requestState", states_.Sign(state)}};
    decision.reply = JsonReply(200, EncodeResult(plan.id, DumpJson(result)));
  } else if (!missing.empty()) {
    // Nothing could be asked and something needed a capability the agent
    // lacks: the request cannot go on without it.
    decision.reply = JsonReply(
        400, ErrorWithData(plan.id, kMissingClientCapability,
                           "Missing required client capability: the tool asks the agent for "
                           "something its client did not declare in clientCapabilities",
                           {{"requiredCapabilities", std::move(missing)}}));
    decision.cancel_call = true;
  }
  return decision;
}

bool McpDispatcher::PassesModern(const ForwardPlan& plan, absl::string_view message) const {
  if (!absl::StrContains(message, "notifications/message")) {
    return true;
  }
  if (plan.modern->log_rank < 0) {
    return false;  // the request asked for no logs
  }
  auto parsed = nlohmann::json::parse(message, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object() || parsed.value("method", "") != "notifications/message") {
    return true;
  }
  const nlohmann::json& params = parsed["params"];
  std::string level = params.is_object() && params.contains("level") && params["level"].is_string()
                          ? params["level"].get<std::string>()
                          : "";
  return LogRank(level) >= plan.modern->log_rank;
}

}  // namespace relay::gateway
