#include "authsvc/forget_hook.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/crypto.h"
#include "nlohmann/json.hpp"

namespace relay::authsvc {
namespace {

common::OperatorReply Error(int status, const std::string& message) {
  return {status, nlohmann::json{{"error", message}}.dump()};
}

constexpr absl::Duration kSignatureWindow = absl::Minutes(5);

// Whether signature ("t=UNIX,v1=HEX") signs body under key, at about now.
bool SignedAtAboutNow(absl::string_view signature, absl::string_view body,
                      const std::string& key, absl::Time now) {
  std::vector<absl::string_view> parts = absl::StrSplit(signature, ',');
  if (parts.size() != 2 || !absl::ConsumePrefix(&parts[0], "t=") ||
      !absl::ConsumePrefix(&parts[1], "v1=")) {
    return false;
  }
  int64_t at = 0;
  if (!absl::SimpleAtoi(parts[0], &at)) {
    return false;
  }
  if (absl::AbsDuration(now - absl::FromUnixSeconds(at)) > kSignatureWindow) {
    return false;
  }
  const std::string expected =
      common::HexEncode(common::HmacSha256(key, absl::StrCat(parts[0], ".", body)));
  return common::SecureEquals(parts[1], expected);
}

}  // namespace

std::string SignForget(const std::string& relay_key, absl::string_view body, absl::Time now) {
  const std::string at = absl::StrCat(absl::ToUnixSeconds(now));
  return absl::StrCat("t=", at, ",v1=",
                      common::HexEncode(common::HmacSha256(relay_key, absl::StrCat(at, ".", body))));
}

std::optional<common::OperatorReply> AnswerForgetHook(
    const common::OperatorRequest& request, const std::string& relay_key,
    const std::function<size_t(const relay::v1::ForgetRequest&)>& forget, absl::Time now) {
  if (request.target != "/forget") {
    return std::nullopt;
  }
  if (request.method != "POST") {
    return Error(405, "use POST");
  }
  if (relay_key.empty() ||
      !SignedAtAboutNow(request.relay_signature, request.body, relay_key, now)) {
    return Error(401,
                 "sign the body with the relay key: X-Relay-Signature: t=UNIX_SECONDS,v1=HEX "
                 "(HMAC-SHA256 of \"UNIX_SECONDS.BODY\"), with this machine's time");
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
