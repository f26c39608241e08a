#include "gateway/core/sealed_json.h"

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace relay::gateway {

SealedJson::SealedJson(absl::string_view secret, absl::string_view purpose,
                       absl::string_view prefix, size_t max_length)
    : key_(common::HmacSha256(secret, purpose)), prefix_(prefix), max_length_(max_length) {}

std::string SealedJson::Mac(absl::string_view signed_part) const {
  return absl::WebSafeBase64Escape(key_.Sign(signed_part));
}

std::string SealedJson::Seal(absl::string_view json) const {
  std::string signed_part = absl::StrCat(prefix_, absl::WebSafeBase64Escape(json));
  return absl::StrCat(signed_part, ".", Mac(signed_part));
}

std::optional<std::string> SealedJson::Open(absl::string_view text) const {
  if (text.size() > max_length_ || !absl::StartsWith(text, prefix_)) {
    return std::nullopt;
  }
  size_t last_dot = text.rfind('.');
  if (last_dot < prefix_.size()) {
    return std::nullopt;
  }
  absl::string_view signed_part = text.substr(0, last_dot);
  if (!common::SecureEquals(Mac(signed_part), text.substr(last_dot + 1))) {
    return std::nullopt;
  }
  std::string json;
  if (!absl::WebSafeBase64Unescape(signed_part.substr(prefix_.size()), &json)) {
    return std::nullopt;
  }
  return json;
}

}  // namespace relay::gateway
