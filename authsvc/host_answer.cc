#include "authsvc/host_answer.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace relay::authsvc {

absl::StatusOr<HostAnswer> InterpretHostReply(const HostReply& reply) {
  HostAnswer answer;
  switch (reply.status) {
    case 200: {
      auto body = nlohmann::json::parse(reply.body, nullptr, /*allow_exceptions=*/false);
      if (!body.is_object() || !body.contains("user") || !body["user"].is_string() ||
          body["user"].get_ref<const std::string&>().empty()) {
        return absl::UnavailableError("host API answered 200 without a user");
      }
      answer.kind = HostAnswer::Kind::kOk;
      answer.user = body["user"].get<std::string>();
      if (body.contains("role") && body["role"].is_string()) {
        answer.role = body["role"].get<std::string>();
      }
      if (body.contains("resource") && body["resource"].is_string()) {
        answer.resource = body["resource"].get<std::string>();
      }
      return answer;
    }
    case 401:
      answer.kind = HostAnswer::Kind::kInvalid;
      return answer;
    case 429: {
      answer.kind = HostAnswer::Kind::kLockedOut;
      uint32_t seconds = 0;
      answer.retry_after_seconds =
          absl::SimpleAtoi(reply.retry_after, &seconds) && seconds > 0 ? seconds : 60;
      return answer;
    }
    case 404:
      return absl::UnavailableError("host API refused the relay key (404): check relay_key_file");
    default:
      return absl::UnavailableError(absl::StrCat("host API answered HTTP ", reply.status));
  }
}

}  // namespace relay::authsvc
