#include "common/secret_file.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace relay::common {

absl::StatusOr<std::string> ReadSecretFile(const std::string& path) {
  if (path.empty()) {
    return absl::InvalidArgumentError("no secret file configured");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read secret file ", path));
  }
  std::ostringstream content;
  content << in.rdbuf();
  std::string secret(absl::StripAsciiWhitespace(content.str()));
  if (secret.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("secret file ", path, " is empty"));
  }
  return secret;
}

}  // namespace relay::common
