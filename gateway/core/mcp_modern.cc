// McpDispatcher, the 2026-07-28 half: server/discover, stateless requests
// (the envelope checked once by CheckModern), results with resultType and
// caching fields, and multi round-trip requests: a tab's requests to the
// agent become input_required rounds with a signed requestState, and the
// retry, on any gateway, resumes the call that waits in the tab.
#include <algorithm>
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
// A tab's request id as a key of inputRequests: the requestState carries the
// round's ids and must stay well under its own bound.
constexpr size_t kMaxKeyBytes = 256;

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

// What a requestState binds the retry to besides its method: the request's
// name or URI, as a digest (the state travels through the agent; it need not
// carry the name itself).
std::string TargetOf(const LazyJson& params) {
  std::optional<std::string> target = params.StringOf("name");
  if (!target) {
    target = params.StringOf("uri");
  }
  return common::Sha256Hex(target.value_or("")).substr(0, 32);
}

// The keys an agent sees for the tab's requests of a round, in order and
// unique: the tab's id itself when it is a string, else its JSON text; a
// repeated key gets "#2", "#3", …
std::vector<std::string> DisplayKeys(const std::vector<std::string>& tab_ids) {
  std::vector<std::string> keys;
  for (const std::string& id : tab_ids) {
    std::string key = DisplayKey(id);
    std::string unique = key;
    for (int n = 2; std::find(keys.begin(), keys.end(), unique) != keys.end(); ++n) {
      unique = absl::StrCat(key, "#", n);
    }
    keys.push_back(std::move(unique));
  }
  return keys;
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
    auto filter = ListenFilter::Parse(message.id, message.params.value(), kMaxListenUris);
    if (auto* error = std::get_if<std::string>(&filter)) {
      decision.action = JsonReply(400, EncodeError(message.id, kInvalidParams, *error));
      return decision;
    }
    // A hidden resource is honored as an unknown one is (listed in the
    // acknowledgement), and never heard of.
    std::shared_ptr<const Catalogue> catalogue = catalogue_.Get();
    ListenFilter& listen = std::get<ListenFilter>(filter);
    for (const std::string& uri : std::vector<std::string>(listen.uris())) {
      if (catalogue->Hides(Catalogue::Kind::kResource, headers.role, uri)) {
        listen.Mute(uri);
      }
    }
    decision.action = ListenPlan{std::move(listen)};
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
  plan.modern->token_key = headers.token_key;
  plan.modern->target = TargetOf(message.params);
  plan.is_tool_call = method == "tools/call";
  plan.request.account = account;
  plan.request.session_id = decision.session;
  plan.request.method = method;
  plan.request.stateless = true;
  plan.request.request_id = DumpJson(message.id);
  nlohmann::json answers = nullptr;
  // Only a retry's params are changed here; any other call's go on unparsed.
  if (message.params.KindOf("inputResponses") || message.params.KindOf("requestState")) {
    nlohmann::json& params = message.params.mutable_value();
    if (auto it = params.find("inputResponses"); it != params.end()) {
      answers = std::move(*it);
      params.erase(it);
      if (!ValidAnswers(answers)) {
        return invalid(
            "Invalid params: inputResponses must map each key of the inputRequests to the "
            "result object of that request");
      }
    }
    if (auto it = params.find("requestState"); it != params.end()) {
      auto state = it->is_string()
                       ? states_.Verify(it->get_ref<const std::string&>(), absl::Now())
                       : absl::InvalidArgumentError("not a string");
      // Another account's state, or one of another request or token, is
      // refused exactly like a forged one.
      if (!state.ok() || state->account != account || state->method != method ||
          state->target != plan.modern->target || state->token != headers.token_key) {
        return invalid(
            "Invalid params: requestState is not one this relay gave for this account's call, "
            "or it has expired; call again without requestState and inputResponses");
      }
      params.erase(it);
      plan.request.resume_call_id = state->call_id;
      plan.request.resume_round = state->round;
      plan.modern->round = state->round;
      std::vector<std::string> keys = DisplayKeys(state->keys);
      for (size_t i = 0; i < keys.size() && answers.is_object(); ++i) {
        if (auto answer = answers.find(keys[i]); answer != answers.end()) {
          plan.request.answers.emplace_back(state->keys[i], DumpJson(*answer));
        }
      }
    } else if (answers.is_object()) {
      plan.modern->early_answers = std::move(answers);
    }
  }
  SealPlan(message, std::move(plan), decision);
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
  // Only tools/call, resources/read and prompts/get may be answered
  // input_required (the specification); other calls cannot ask the agent.
  const std::string& method_asked = plan.request.method;
  bool may_ask = method_asked == "tools/call" || method_asked == "resources/read" ||
                 method_asked == "prompts/get";
  std::vector<nlohmann::json> asked_requests;
  for (const RoundRequest& request : requests) {
    state.call_id = request.call_id;
    auto parsed = nlohmann::json::parse(request.message, nullptr, /*allow_exceptions=*/false);
    std::string method = parsed.is_object() && parsed.contains("method") && parsed["method"].is_string()
                             ? parsed["method"].get<std::string>()
                             : "";
    const char* capability = CapabilityFor(method);
    if (auto early = modern.early_answers.find(DisplayKey(request.tab_request_id));
        early != modern.early_answers.end()) {
      to_tab(request, false, DumpJson(*early));
      modern.early_answers.erase(early);
      continue;
    }
    auto refuse = [&](int code, std::string text) {
      to_tab(request, true, EncodeErrorObject(code, text));
    };
    if (!may_ask) {
      refuse(kInternalError, absl::StrCat("the agent cannot be asked anything during ",
                                          method_asked, " (2026-07-28 agents answer questions "
                                          "only for tools/call, resources/read, prompts/get)"));
      continue;
    }
    if (request.tab_request_id.size() > kMaxKeyBytes) {
      refuse(kInvalidParams, absl::StrCat("request ids to a 2026-07-28 agent are at most ",
                                          kMaxKeyBytes, " bytes"));
      continue;
    }
    if (capability == nullptr || !Declared(modern.capabilities, capability)) {
      // Only what the agent declared it can answer is asked.
      if (capability != nullptr) {
        missing[capability] = nlohmann::json::object();
      }
      refuse(kMissingClientCapability,
             absl::StrCat("the agent did not declare the ",
                          capability == nullptr ? method : capability,
                          " capability: it cannot be asked this"));
      continue;
    }
    asked_requests.push_back({{"method", method},
                              {"params", parsed.contains("params") ? std::move(parsed["params"])
                                                                   : nlohmann::json::object()}});
    state.keys.push_back(request.tab_request_id);
  }
  std::vector<std::string> keys = DisplayKeys(state.keys);
  for (size_t i = 0; i < keys.size(); ++i) {
    input_requests[keys[i]] = std::move(asked_requests[i]);
  }
  if (!input_requests.empty()) {
    state.account = account;
    state.method = plan.request.method;
    state.target = modern.target;
    state.token = modern.token_key;
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

std::string McpDispatcher::TokenKey(absl::string_view authorization) const {
  absl::string_view token = authorization;
  if (token.size() > 7 && absl::EqualsIgnoreCase(token.substr(0, 7), "bearer ")) {
    token.remove_prefix(7);
  }
  return common::HexEncode(token_key_.Sign(token)).substr(0, 32);
}

bool McpDispatcher::PassesModern(const ForwardPlan& plan, absl::string_view message) const {
  if (absl::StrContains(message, "notifications/progress") && plan.agent_progress_token.is_null()) {
    return false;  // this request asked for no progress (a retry may not have)
  }
  if (!absl::StrContains(message, "notifications/message")) {
    return true;
  }
  auto parsed = nlohmann::json::parse(message, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object() || !parsed.contains("method") || parsed["method"] != "notifications/message") {
    return true;
  }
  if (plan.modern->log_rank < 0) {
    return false;  // the request asked for no logs
  }
  const nlohmann::json& params = parsed["params"];
  std::string level = params.is_object() && params.contains("level") && params["level"].is_string()
                          ? params["level"].get<std::string>()
                          : "";
  return LogRank(level) >= plan.modern->log_rank;
}

}  // namespace relay::gateway
