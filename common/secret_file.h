#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace relay::common {

// Reads a secret (relay key, session secret) from a file, trimming surrounding
// whitespace. Errors name the path and never the content.
absl::StatusOr<std::string> ReadSecretFile(const std::string& path);

}  // namespace relay::common
