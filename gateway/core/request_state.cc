#include "gateway/core/request_state.h"

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/crypto.h"
#include "nlohmann/json.hpp"

namespace relay::gateway {
namespace {

constexpr absl::string_view kPrefix = "rs1.";
// A requestState is echoed by the agent; anything longer is not ours.
constexpr size_t kMaxLength = 8 * 1024;

}  // namespace

// A key of its own, so that a requestState can never pass for a session id
// (or the reverse) although both come from the one shared secret.
RequestStateSigner::RequestStateSigner(absl::string_view secret)
    : key_(common::HmacSha256(secret, "relay request state v1")) {}

std::string RequestStateSigner::Mac(absl::string_view signed_part) const {
  return absl::WebSafeBase64Escape(key_.Sign(signed_part));
}

std::string RequestStateSigner::Sign(const RequestState& state) const {
  nlohmann::json payload = {{"a", state.account},
                            {"c", state.call_id},
                            {"r", state.round},
                            {"k", state.keys},
                            {"m", state.method},
                            {"n", state.target},
                            {"t", state.token},
                            {"e", absl::ToUnixMillis(state.expires)}};
  std::string signed_part =
      absl::StrCat(kPrefix, absl::WebSafeBase64Escape(payload.dump(-1, ' ', false,
                                                                   nlohmann::json::error_handler_t::replace)));
  return absl::StrCat(signed_part, ".", Mac(signed_part));
}

absl::StatusOr<RequestState> RequestStateSigner::Verify(absl::string_view text,
                                                        absl::Time now) const {
  auto invalid = [] { return absl::InvalidArgumentError("not a requestState of this relay"); };
  if (text.size() > kMaxLength || !absl::StartsWith(text, kPrefix)) {
    return invalid();
  }
  size_t last_dot = text.rfind('.');
  if (last_dot < kPrefix.size()) {
    return invalid();
  }
  absl::string_view signed_part = text.substr(0, last_dot);
  if (!common::SecureEquals(Mac(signed_part), text.substr(last_dot + 1))) {
    return invalid();
  }
  std::string json;
  if (!absl::WebSafeBase64Unescape(signed_part.substr(kPrefix.size()), &json)) {
    return invalid();
  }
  auto payload = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!payload.is_object() || !payload["a"].is_string() || !payload["c"].is_number_unsigned() ||
      !payload["r"].is_number_unsigned() || !payload["k"].is_array() ||
      !payload["m"].is_string() || !payload["n"].is_string() || !payload["t"].is_string() ||
      !payload["e"].is_number_integer()) {
    return invalid();
  }
  RequestState state;
  state.account = payload["a"].get<std::string>();
  state.call_id = payload["c"].get<uint64_t>();
  state.round = payload["r"].get<uint32_t>();
  state.method = payload["m"].get<std::string>();
  state.target = payload["n"].get<std::string>();
  state.token = payload["t"].get<std::string>();
  for (const auto& key : payload["k"]) {
    if (!key.is_string()) {
      return invalid();
    }
    state.keys.push_back(key.get<std::string>());
  }
  state.expires = absl::FromUnixMillis(payload["e"].get<int64_t>());
  if (now >= state.expires) {
    return absl::DeadlineExceededError("the requestState has expired");
  }
  return state;
}

}  // namespace relay::gateway
