#pragma once

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"

namespace relay::common {

// Reads a whole file (at most 1 MiB). When private_file, refuses a file that
// group or others may read ("run: chmod 600 ..."), checking the mode of the
// file it opened. Errors name the path, never the content.
absl::StatusOr<std::string> ReadFileChecked(const std::string& path, bool private_file);

// The shortest secret accepted (32 hex digits are 128 bits).
inline constexpr size_t kMinSecretChars = 32;

// Reads a secret (relay key, session secret) from a file, trimming surrounding
// whitespace. Refuses a file readable by group or others, and a secret shorter
// than kMinSecretChars, saying how to fix it. Errors name the path and never
// the content.
absl::StatusOr<std::string> ReadSecretFile(const std::string& path);

}  // namespace relay::common
