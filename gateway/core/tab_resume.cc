#include "gateway/core/tab_resume.h"

#include "nlohmann/json.hpp"

namespace relay::gateway {
namespace {

// A credential is a few hundred bytes; the hello's 16 KiB bound is the caller's.
constexpr size_t kMaxLength = 2 * 1024;

}  // namespace

TabResumeSigner::TabResumeSigner(absl::string_view secret)
    : sealed_(secret, "relay tab resume v1", "tr1.", kMaxLength) {}

std::string TabResumeSigner::Sign(const TabResume& resume) const {
  nlohmann::json payload = {{"a", resume.account},
                            {"r", resume.role},
                            {"g", resume.generation},
                            {"s", absl::ToUnixMillis(resume.signed_in)},
                            {"e", absl::ToUnixMillis(resume.expires)}};
  return sealed_.Seal(payload.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

absl::StatusOr<TabResume> TabResumeSigner::Verify(absl::string_view text, absl::Time now) const {
  auto invalid = [] { return absl::InvalidArgumentError("not a resume credential of this relay"); };
  std::optional<std::string> json = sealed_.Open(text);
  if (!json) {
    return invalid();
  }
  auto payload = nlohmann::json::parse(*json, nullptr, /*allow_exceptions=*/false);
  if (!payload.is_object() || !payload["a"].is_string() || !payload["r"].is_string() ||
      !payload["g"].is_number_unsigned() || !payload["s"].is_number_integer() ||
      !payload["e"].is_number_integer()) {
    return invalid();
  }
  TabResume resume;
  resume.account = payload["a"].get<std::string>();
  resume.role = payload["r"].get<std::string>();
  resume.generation = payload["g"].get<uint64_t>();
  resume.signed_in = absl::FromUnixMillis(payload["s"].get<int64_t>());
  resume.expires = absl::FromUnixMillis(payload["e"].get<int64_t>());
  if (resume.account.empty()) {
    return invalid();
  }
  if (now >= resume.expires || now >= resume.signed_in + kChainLifetime) {
    return absl::DeadlineExceededError("the resume credential has expired");
  }
  return resume;
}

}  // namespace relay::gateway
