#include "gateway/core/listen_filter.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gateway/core/jsonrpc.h"
#include "gateway/core/modern_request.h"

namespace relay::gateway {

std::variant<ListenFilter, std::string> ListenFilter::Parse(const nlohmann::json& id,
                                                            const nlohmann::json& params,
                                                            size_t max_uris) {
  if (!params.is_object() || !params.contains("notifications") ||
      !params["notifications"].is_object()) {
    return std::string("Invalid params: subscriptions/listen needs params.notifications, an object "
                       "naming what to hear");
  }
  const nlohmann::json& asked = params["notifications"];
  auto flag = [&asked](const char* name) {
    auto it = asked.find(name);
    return it != asked.end() && it->is_boolean() && it->get<bool>();
  };
  ListenFilter filter;
  filter.id_ = id;
  filter.tools_ = flag("toolsListChanged");
  filter.prompts_ = flag("promptsListChanged");
  filter.resources_ = flag("resourcesListChanged");
  if (auto uris = asked.find("resourceSubscriptions"); uris != asked.end() && !uris->is_null()) {
    if (!uris->is_array() || uris->size() > max_uris ||
        !std::all_of(uris->begin(), uris->end(), [](const auto& u) { return u.is_string(); })) {
      return absl::StrCat("Invalid params: notifications.resourceSubscriptions must be at most ",
                          max_uris, " resource URIs (strings)");
    }
    for (const auto& uri : *uris) {
      filter.uris_.push_back(uri.get<std::string>());
    }
  }
  return filter;
}

std::string ListenFilter::Tagged(nlohmann::json message) const {
  nlohmann::json& params = message["params"];
  if (!params.is_object()) {
    params = nlohmann::json::object();
  }
  if (!params.contains("_meta") || !params["_meta"].is_object()) {
    params["_meta"] = nlohmann::json::object();
  }
  params["_meta"][std::string(kMetaSubscriptionId)] = id_;
  return DumpJson(message);
}

std::string ListenFilter::Acknowledged() const {
  nlohmann::json honored = nlohmann::json::object();
  if (tools_) honored["toolsListChanged"] = true;
  if (prompts_) honored["promptsListChanged"] = true;
  if (resources_) honored["resourcesListChanged"] = true;
  if (!uris_.empty()) honored["resourceSubscriptions"] = uris_;
  return Tagged({{"jsonrpc", "2.0"},
                 {"method", "notifications/subscriptions/acknowledged"},
                 {"params", {{"notifications", std::move(honored)}}}});
}

std::optional<std::string> ListenFilter::Pass(absl::string_view message) const {
  auto parsed = nlohmann::json::parse(message, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object() || !parsed.contains("method") || !parsed["method"].is_string()) {
    return std::nullopt;
  }
  const std::string& method = parsed["method"].get_ref<const std::string&>();
  bool wanted = (method == "notifications/tools/list_changed" && tools_) ||
                (method == "notifications/prompts/list_changed" && prompts_) ||
                (method == "notifications/resources/list_changed" && resources_);
  if (method == "notifications/resources/updated") {
    const nlohmann::json& params = parsed["params"];
    wanted = params.is_object() && params.contains("uri") && params["uri"].is_string() &&
             std::find(uris_.begin(), uris_.end(), params["uri"].get<std::string>()) != uris_.end() &&
             std::find(muted_.begin(), muted_.end(), params["uri"].get<std::string>()) == muted_.end();
  }
  if (!wanted) {
    return std::nullopt;
  }
  return Tagged(std::move(parsed));
}

std::string ListenFilter::Failed(absl::string_view why) const {
  return EncodeError(id_, kInternalError, why);
}

std::string ListenFilter::Closed() const {
  nlohmann::json result = {{"_meta", {{std::string(kMetaSubscriptionId), id_}}},
                           {"resultType", "complete"}};
  return EncodeResult(id_, DumpJson(result));
}

}  // namespace relay::gateway
