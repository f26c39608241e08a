#include "common/secret_file.h"

#include <sys/stat.h>

#include <cstdio>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace relay::common {

absl::StatusOr<std::string> ReadFileChecked(const std::string& path, bool private_file) {
  // Opened first, then its mode read from the open file: what is checked is
  // what is read.
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot read ", path));
  }
  struct stat info;
  if (private_file && fstat(fileno(file), &info) == 0 && (info.st_mode & 077) != 0) {
    std::fclose(file);
    return absl::PermissionDeniedError(
        absl::StrCat(path, " is readable by other users; run: chmod 600 ", path));
  }
  std::string content;
  char buffer[4096];
  for (size_t n; content.size() < (1 << 20) &&
                 (n = std::fread(buffer, 1, sizeof buffer, file)) > 0;) {
    content.append(buffer, n);
  }
  std::fclose(file);
  return content;
}

absl::StatusOr<std::string> ReadSecretFile(const std::string& path) {
  if (path.empty()) {
    return absl::InvalidArgumentError("no secret file configured");
  }
  absl::StatusOr<std::string> content = ReadFileChecked(path, /*private_file=*/true);
  if (!content.ok()) {
    return absl::Status(content.status().code(),
                        absl::StrCat("secret file: ", content.status().message()));
  }
  std::string secret(absl::StripAsciiWhitespace(*content));
  if (secret.size() < kMinSecretChars) {
    return absl::InvalidArgumentError(absl::StrCat(
        "secret file ", path, " holds fewer than ", kMinSecretChars,
        " characters; make a new one: head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n' > ",
        path));
  }
  return secret;
}

}  // namespace relay::common
