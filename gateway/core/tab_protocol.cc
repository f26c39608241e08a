#include "gateway/core/tab_protocol.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/text.h"

namespace relay::gateway {

namespace {

// _meta[key] of params, if params._meta is an object that has it.
const nlohmann::json* Meta(const nlohmann::json& params, const char* key) {
  if (!params.is_object()) {
    return nullptr;
  }
  auto meta = params.find("_meta");
  if (meta == params.end() || !meta->is_object()) {
    return nullptr;
  }
  auto it = meta->find(key);
  return it == meta->end() ? nullptr : &*it;
}

// The string member key of object, or "".
std::string StringMember(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) {
    return {};
  }
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool IsTabNotification(absl::string_view method) {
  return method == "notifications/resources/updated" ||
         method == "notifications/resources/list_changed" ||
         method == "notifications/tools/list_changed" ||
         method == "notifications/prompts/list_changed" || method == "notifications/progress" ||
         method == "notifications/message";
}

}  // namespace

std::optional<TabHello> ParseTabHello(absl::string_view text, int max_depth) {
  auto decoded = DecodeMessage(text, max_depth);
  auto* message = std::get_if<RpcMessage>(&decoded);
  if (message == nullptr || message->kind != RpcMessage::Kind::kRequest ||
      message->method != "relay/hello" || !message->params.is_object()) {
    return std::nullopt;
  }
  const nlohmann::json& params = message->params.value();
  // A tab that comes back after its connection ended may bring the credential
  // its last connection was given instead of a new ticket.
  auto ticket = params.find("ticket");
  auto resume = params.find("resume");
  bool has_ticket = ticket != params.end() && ticket->is_string();
  bool has_resume = resume != params.end() && resume->is_string();
  if (!has_ticket && !has_resume) {
    return std::nullopt;
  }
  TabHello hello;
  hello.id = std::move(message->id);
  if (has_resume) {
    hello.resume = resume->get<std::string>();
  } else {
    hello.ticket = ticket->get<std::string>();
  }
  if (auto client = params.find("client"); client != params.end()) {
    // Shown to operators and counted in memory for every tab: bounded here.
    hello.client_name = common::TruncateUtf8(StringMember(*client, "name"), kMaxClientText);
    hello.client_version = common::TruncateUtf8(StringMember(*client, "version"), kMaxClientText);
  }
  return hello;
}

std::string EncodeHelloAnswer(const nlohmann::json& hello_id, const std::string& account,
                              const std::string& role, const std::string& tab_id,
                              uint32_t agents) {
  nlohmann::json result = {
      {"protocol", "1"}, {"account", account}, {"role", role},
      {"tabId", tab_id}, {"agents", agents},
  };
  return EncodeResult(hello_id, DumpJson(result));
}

std::optional<TabNotice> ParseTabNotice(const RpcMessage& message) {
  if (!IsTabNotification(message.method)) {
    return std::nullopt;
  }
  TabNotice notice;
  notice.method = message.method;
  const nlohmann::json& params = message.params.value();
  notice.uri = StringMember(params, "uri");
  notice.level = StringMember(params, "level");
  notice.progress_token = StringMember(params, "progressToken");
  if (const nlohmann::json* line = Meta(params, "relay/line"); line && line->is_string()) {
    // Kept by the router in every session of the account until the next call.
    notice.line = common::TruncateUtf8(line->get_ref<const std::string&>(), kMaxViewLineBytes);
  }
  if (const nlohmann::json* call = Meta(params, "relay/requestId");
      call && call->is_number_unsigned()) {
    notice.call_id = call->get<uint64_t>();
  }
  if (notice.method == "notifications/resources/updated" && notice.uri.empty()) {
    return std::nullopt;  // an update of nothing reaches no subscriber
  }
  notice.params = message.params.present() ? message.params.text() : "{}";
  // One that goes to every agent of the account (a list changed, an update,
  // a log line of no call) is copied once per agent on the link: bounded, or
  // one message of a tab could fill the link that every account shares.
  const bool fans_out = notice.method != "notifications/progress" &&
                        !(notice.method == "notifications/message" && notice.call_id != 0);
  if (fans_out && notice.params.size() > kMaxFanOutParamsBytes) {
    return std::nullopt;
  }
  return notice;
}

bool IsRequestToAgent(absl::string_view method) {
  return method == "sampling/createMessage" || method == "elicitation/create" ||
         method == "roots/list";
}

std::variant<AgentRequest, std::string> ToAgentRequest(RpcMessage& message) {
  const nlohmann::json* call = Meta(message.params.value(), "relay/requestId");
  if (call == nullptr || !call->is_number_unsigned()) {
    return std::string(
        "requests to the agent need params._meta[\"relay/requestId\"] naming the call in "
        "progress");
  }
  AgentRequest out;
  out.call_id = call->get<uint64_t>();
  out.tab_request_id = DumpJson(message.id);
  // The agent sees an id that names the call and the tab's own id, so its
  // answer finds the way back through any gateway.
  nlohmann::json params = std::move(message.params.mutable_value());
  params["_meta"].erase("relay/requestId");
  if (params["_meta"].empty()) {
    params.erase("_meta");
  }
  nlohmann::json request = {
      {"jsonrpc", "2.0"},
      {"id", absl::StrCat(kTabRequestIdPrefix, out.call_id, "/", out.tab_request_id)},
      {"method", message.method},
      {"params", std::move(params)},
  };
  out.message = DumpJson(request);
  return out;
}

bool ParseAgentReplyId(const nlohmann::json& id, uint64_t* call_id, std::string* tab_request_id) {
  if (!id.is_string()) {
    return false;
  }
  absl::string_view text = id.get_ref<const std::string&>();
  if (!absl::ConsumePrefix(&text, kTabRequestIdPrefix)) {
    return false;
  }
  size_t slash = text.find('/');
  if (slash == absl::string_view::npos || !absl::SimpleAtoi(text.substr(0, slash), call_id)) {
    return false;
  }
  *tab_request_id = std::string(text.substr(slash + 1));
  return !tab_request_id->empty();
}

TabAnswer UnreadableAnswer(bool is_tool_call, absl::string_view what) {
  std::string why = absl::StrCat("The editor's answer was ", what, " and could not be passed on.");
  if (is_tool_call) {
    nlohmann::json result = {{"content", {{{"type", "text"}, {"text", why}}}}, {"isError", true}};
    return {false, DumpJson(result)};
  }
  return {true, EncodeErrorObject(kInternalError, why)};
}

}  // namespace relay::gateway
