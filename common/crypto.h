#pragma once

#include "absl/strings/string_view.h"
#include <string>
#include <string_view>

namespace relay::common {

// Lowercase hex SHA-256 of data (OpenSSL).
std::string Sha256Hex(absl::string_view data);

// Raw 32-byte HMAC-SHA256 of data under key (OpenSSL).
std::string HmacSha256(absl::string_view key, absl::string_view data);

// Constant-time comparison of equal-length secrets.
bool SecureEquals(absl::string_view a, absl::string_view b);

// n bytes from the OS's CSPRNG (OpenSSL RAND_bytes). Aborts if it fails:
// ids made from a failed RNG would be guessable.
std::string RandomBytes(size_t n);

// Lowercase hex of arbitrary bytes.
std::string HexEncode(absl::string_view bytes);

}  // namespace relay::common
