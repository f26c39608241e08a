// The RELAY_* contract operators rely on (docs/operations.md): every flag --name may be set as
// RELAY_NAME, and the command line wins.
#include "common/flags.h"

#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/flags/flag.h"

ABSL_FLAG(std::string, flags_test_address, "default", "a flag of this test");
ABSL_FLAG(int, flags_test_count, 1, "another flag of this test");

namespace relay::common {
namespace {

std::vector<char*> Parse(std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (std::string& arg : args) {
    argv.push_back(arg.data());
  }
  return ParseFlagsWithEnv(static_cast<int>(argv.size()), argv.data());
}

TEST(ParseFlagsWithEnvTest, TheEnvironmentSetsAFlagAndTheCommandLineWins) {
  setenv("RELAY_FLAGS_TEST_ADDRESS", "from-env:1", 1);
  setenv("RELAY_FLAGS_TEST_COUNT", "7", 1);
  std::vector<std::string> args = {"prog", "--flags_test_count=9", "word"};
  std::vector<char*> positional = Parse(args);
  EXPECT_EQ(absl::GetFlag(FLAGS_flags_test_address), "from-env:1");
  EXPECT_EQ(absl::GetFlag(FLAGS_flags_test_count), 9);
  ASSERT_EQ(positional.size(), 2u);
  EXPECT_EQ(std::string(positional[1]), "word");
  unsetenv("RELAY_FLAGS_TEST_ADDRESS");
  unsetenv("RELAY_FLAGS_TEST_COUNT");
}

TEST(ParseFlagsWithEnvDeathTest, AMalformedValueInTheEnvironmentIsFatal) {
  EXPECT_EXIT(
      {
        setenv("RELAY_FLAGS_TEST_COUNT", "seven", 1);
        std::vector<std::string> args = {"prog"};
        Parse(args);
      },
      ::testing::ExitedWithCode(1), "");  // the log line naming it goes to stdout
}

TEST(SplitListTest, DropsEmptyItemsAndSpaces) {
  EXPECT_EQ(SplitList("a, b,,c ,"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(SplitList("").empty());
  EXPECT_TRUE(SplitList(" , ").empty());
}

}  // namespace
}  // namespace relay::common
