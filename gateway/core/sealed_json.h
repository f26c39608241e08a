#pragma once

#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "common/crypto.h"

namespace relay::gateway {

// The envelope of the relay's signed values that a client holds and hands back
// (a requestState, a tab's resume credential): "<prefix><payload>.<mac>", the
// payload base64url JSON, the MAC an HMAC-SHA256 under a key derived from the
// secret every gateway shares and the value's purpose, so that any gateway
// opens what another sealed and one kind can never pass for another. A client
// can read the payload but cannot change it.
class SealedJson {
 public:
  // purpose names the key ("relay request state v1"); prefix ends with '.'.
  SealedJson(absl::string_view secret, absl::string_view purpose, absl::string_view prefix,
             size_t max_length);

  std::string Seal(absl::string_view json) const;

  // The JSON text sealed, or nothing for anything forged, truncated, too long
  // or of another kind.
  std::optional<std::string> Open(absl::string_view text) const;

 private:
  std::string Mac(absl::string_view signed_part) const;

  common::HmacSha256Key key_;
  std::string prefix_;
  size_t max_length_;
};

}  // namespace relay::gateway
