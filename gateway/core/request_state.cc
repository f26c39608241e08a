#include "gateway/core/request_state.h"

#include "nlohmann/json.hpp"

namespace relay::gateway {
namespace {

// A requestState is echoed by the agent; anything longer is not ours.
constexpr size_t kMaxLength = 8 * 1024;

}  // namespace

// A key of its own, so that a requestState can never pass for a session id
// or a tab's resume credential (or the reverse) although all come from the one
// shared secret.
RequestStateSigner::RequestStateSigner(absl::string_view secret)
    : sealed_(secret, "relay request state v1", "rs1.", kMaxLength) {}

std::string RequestStateSigner::Sign(const RequestState& state) const {
  nlohmann::json payload = {{"a", state.account},
                            {"c", state.call_id},
                            {"r", state.round},
                            {"k", state.keys},
                            {"m", state.method},
                            {"n", state.target},
                            {"t", state.token},
                            {"e", absl::ToUnixMillis(state.expires)}};
  return sealed_.Seal(payload.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

absl::StatusOr<RequestState> RequestStateSigner::Verify(absl::string_view text,
                                                        absl::Time now) const {
  auto invalid = [] { return absl::InvalidArgumentError("not a requestState of this relay"); };
  std::optional<std::string> json = sealed_.Open(text);
  if (!json) {
    return invalid();
  }
  auto payload = nlohmann::json::parse(*json, nullptr, /*allow_exceptions=*/false);
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
