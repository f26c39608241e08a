#include "router/core/fanout_budget.h"

#include "gtest/gtest.h"

namespace relay::router {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1'000'000);

TEST(FanoutBudgetTest, ABurstThenTheRate) {
  FanoutBudget budget(/*bytes_per_second=*/100, /*burst_bytes=*/1000);
  EXPECT_TRUE(budget.Spend("alice", 1000, kNow));
  EXPECT_FALSE(budget.Spend("alice", 1, kNow));
  EXPECT_FALSE(budget.Spend("alice", 200, kNow + absl::Seconds(1)));
  EXPECT_TRUE(budget.Spend("alice", 200, kNow + absl::Seconds(2)));
}

TEST(FanoutBudgetTest, EachAccountHasItsOwn) {
  FanoutBudget budget(100, 1000);
  EXPECT_TRUE(budget.Spend("alice", 1000, kNow));
  EXPECT_FALSE(budget.Spend("alice", 10, kNow));
  EXPECT_TRUE(budget.Spend("bob", 1000, kNow));
}

TEST(FanoutBudgetTest, FullBucketsAreForgotten) {
  FanoutBudget budget(100, 1000);
  budget.Spend("alice", 500, kNow);
  budget.Sweep(kNow + absl::Seconds(1));
  EXPECT_EQ(budget.size(), 1u);
  budget.Sweep(kNow + absl::Seconds(10));
  EXPECT_EQ(budget.size(), 0u);
}

}  // namespace
}  // namespace relay::router
