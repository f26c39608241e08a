#include "common/secret_file.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

namespace relay::common {
namespace {

// A file of the test's own, with the given content and mode; removed at the end.
class TempFile {
 public:
  TempFile(const std::string& content, mode_t mode) {
    char name[] = "/tmp/relay-secret-test-XXXXXX";
    int fd = mkstemp(name);
    path_ = name;
    FILE* file = fdopen(fd, "w");
    std::fputs(content.c_str(), file);
    std::fclose(file);
    chmod(path_.c_str(), mode);
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

const std::string kSecret(64, 'a');

TEST(ReadSecretFileTest, ReadsAPrivateFileTrimmed) {
  TempFile file("\n  " + kSecret + "\n", 0600);
  auto secret = ReadSecretFile(file.path());
  ASSERT_TRUE(secret.ok()) << secret.status();
  EXPECT_EQ(*secret, kSecret);
}

TEST(ReadSecretFileTest, RefusesAFileOthersMayReadAndSaysHowToFixIt) {
  TempFile file(kSecret, 0644);
  auto secret = ReadSecretFile(file.path());
  ASSERT_FALSE(secret.ok());
  EXPECT_EQ(secret.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(secret.status().message().find("chmod 600 " + file.path()), std::string::npos);
  EXPECT_EQ(secret.status().message().find(kSecret), std::string::npos) << "never the content";
}

TEST(ReadSecretFileTest, RefusesAShortSecretWithoutPrintingIt) {
  TempFile file("short-secret", 0600);
  auto secret = ReadSecretFile(file.path());
  ASSERT_FALSE(secret.ok());
  EXPECT_EQ(secret.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(secret.status().message().find("head -c 32 /dev/urandom"), std::string::npos);
  EXPECT_EQ(secret.status().message().find("short-secret"), std::string::npos);
}

TEST(ReadSecretFileTest, NoPathOrNoFileIsAnError) {
  EXPECT_EQ(ReadSecretFile("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadSecretFile("/nonexistent/relay.key").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(ReadFileCheckedTest, APublicFileMayBeReadWhenItNeedNotBePrivate) {
  TempFile file("catalogue", 0644);
  auto content = ReadFileChecked(file.path(), /*private_file=*/false);
  ASSERT_TRUE(content.ok());
  EXPECT_EQ(*content, "catalogue");
}

}  // namespace
}  // namespace relay::common
