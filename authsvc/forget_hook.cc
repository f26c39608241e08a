#include "authsvc/forget_hook.h"

#include "absl/strings/str_cat.h"
#include "common/crypto.h"
#include "nlohmann/json.hpp"

namespace relay::authsvc {
namespace {

common::OperatorReply Error(int status, const std::string& message) {
  return {status, nlohmann::json{{"error", message}}.dump()};
}

}  // namespace

std::optional<common::OperatorReply> AnswerForgetHook(
    const common::OperatorRequest& request, const std::string& relay_key,
    const std::function<size_t(const relay::v1::ForgetRequest&)>& forget) {
  if (request.target != "/forget") {
    return std::nullopt;
  }
  if (request.method != "POST") {
    return Error(405, "use POST");
  }
  if (relay_key.empty() || !common::SecureEquals(request.relay_key, relay_key)) {
    return Error(401, "send the relay key as X-Relay-Key");
  }
  nlohmann::json body = nlohmann::json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  relay::v1::ForgetRequest what;
  if (body.is_object() && body.size() == 1 && body.contains("user") && body["user"].is_string() &&
      !body["user"].get_ref<const std::string&>().empty()) {
    what.set_user(body["user"].get<std::string>());
  } else if (body.is_object() && body.size() == 1 && body.contains("tokenSha256") &&
             body["tokenSha256"].is_string() &&
             common::IsSha256Hex(body["tokenSha256"].get_ref<const std::string&>())) {
    what.set_token_sha256(body["tokenSha256"].get<std::string>());
  } else {
    return Error(400,
                 "send {\"user\": NAME} or {\"tokenSha256\": 64 lowercase hex digits}, one of them");
  }
  size_t dropped = forget(what);
  return common::OperatorReply{200, nlohmann::json{{"dropped", dropped}}.dump()};
}

}  // namespace relay::authsvc
