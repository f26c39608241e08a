#include "gateway/core/lockout_memo.h"

#include <gtest/gtest.h>

namespace relay::gateway {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1000);

TEST(LockoutMemoTest, AnAddressIsLockedOutUntilItsRetryAfter) {
  LockoutMemo memo;
  EXPECT_TRUE(memo.empty());
  memo.Put("10.0.0.1", kNow + absl::Seconds(30), kNow);
  EXPECT_FALSE(memo.empty());
  EXPECT_EQ(memo.Remaining("10.0.0.1", kNow + absl::Seconds(10)), absl::Seconds(20));
  EXPECT_EQ(memo.Remaining("10.0.0.2", kNow), std::nullopt);
  // Past it, the address is forgotten.
  EXPECT_EQ(memo.Remaining("10.0.0.1", kNow + absl::Seconds(30)), std::nullopt);
  EXPECT_TRUE(memo.empty());
}

TEST(LockoutMemoTest, BoundedExpiredEntriesMakeRoom) {
  LockoutMemo memo(/*capacity=*/2);
  memo.Put("a", kNow + absl::Seconds(1), kNow);
  memo.Put("b", kNow + absl::Seconds(100), kNow);
  // Full of live lock-outs: a third is not kept (the host API goes on braking it).
  memo.Put("c", kNow + absl::Seconds(100), kNow);
  EXPECT_EQ(memo.Remaining("c", kNow), std::nullopt);
  // Once "a" has expired it makes room.
  memo.Put("c", kNow + absl::Seconds(100), kNow + absl::Seconds(2));
  EXPECT_EQ(memo.Remaining("c", kNow + absl::Seconds(2)), absl::Seconds(98));
  EXPECT_EQ(memo.Remaining("a", kNow + absl::Seconds(2)), std::nullopt);
  // Renewing a known address never needs room.
  memo.Put("b", kNow + absl::Seconds(200), kNow + absl::Seconds(2));
  EXPECT_EQ(memo.Remaining("b", kNow + absl::Seconds(2)), absl::Seconds(198));
}

}  // namespace
}  // namespace relay::gateway
