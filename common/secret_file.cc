#include "common/secret_file.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace relay::common {

absl::StatusOr<std::string> ReadSecretFile(const std::string& path) {
  if (path.empty()) {
    return absl::InvalidArgumentError("no secret file configured");
  }
  struct stat info;
  if (stat(path.c_str(), &info) == 0 && (info.st_mode & 077) != 0) {
    return absl::PermissionDeniedError(absl::StrCat(
        "secret file ", path, " is readable by other users; run: chmod 600 ", path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read secret file ", path));
  }
  std::ostringstream content;
  content << in.rdbuf();
  std::string secret(absl::StripAsciiWhitespace(content.str()));
  if (secret.size() < kMinSecretChars) {
    return absl::InvalidArgumentError(absl::StrCat(
        "secret file ", path, " holds fewer than ", kMinSecretChars,
        " characters; make a new one: head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n' > ",
        path));
  }
  return secret;
}

}  // namespace relay::common
