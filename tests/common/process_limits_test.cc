#include "common/process_limits.h"

#include <sys/resource.h>

#include <algorithm>

#include "gtest/gtest.h"

namespace relay::common {
namespace {

TEST(RaiseOpenFileLimit, RunsAtTheHardLimitAndSaysWhatItWas) {
  rlimit start{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &start), 0);
  // Start below the hard limit, as a shell with `ulimit -Sn 1024` would start a service.
  rlimit lowered = start;
  lowered.rlim_cur = std::min<rlim_t>(start.rlim_max, 512);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lowered), 0);

  absl::StatusOr<OpenFileLimit> limit = RaiseOpenFileLimit();
  ASSERT_TRUE(limit.ok()) << limit.status();
  EXPECT_EQ(limit->before, lowered.rlim_cur);
  EXPECT_EQ(limit->now, start.rlim_max);
  EXPECT_EQ(limit->hard, start.rlim_max);
  rlimit after{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &after), 0);
  EXPECT_EQ(after.rlim_cur, start.rlim_max);

  // At the hard limit already: nothing changes.
  limit = RaiseOpenFileLimit();
  ASSERT_TRUE(limit.ok()) << limit.status();
  EXPECT_EQ(limit->before, limit->now);
}

TEST(ConnectionsWithin, KeepsDescriptorsForTheServerItselfAndForRefusing) {
  // This machine's hard limit: 256 kept back.
  EXPECT_EQ(ConnectionsWithin(20000), 19744);
  EXPECT_EQ(ConnectionsWithin(1024), 768);
  // A small limit keeps a quarter, not more than it has.
  EXPECT_EQ(ConnectionsWithin(64), 48);
  EXPECT_EQ(ConnectionsWithin(1), 1);
  // No limit, or none known, is a count no server reaches, not an overflow or a gateway that
  // serves one connection.
  EXPECT_GT(ConnectionsWithin(RLIM_INFINITY), int64_t{1} << 30);
  EXPECT_GT(ConnectionsWithin(0), int64_t{1} << 30);
}

}  // namespace
}  // namespace relay::common
