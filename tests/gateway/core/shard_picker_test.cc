#include "gateway/core/shard_picker.h"

#include <map>

#include "gtest/gtest.h"

namespace relay::gateway {
namespace {

TEST(ShardPicker, OrderOfAddressesDoesNotMatter) {
  ShardPicker a({"r1:7001", "r2:7001", "r3:7001"});
  ShardPicker b({"r3:7001", "r1:7001", "r2:7001"});
  for (int i = 0; i < 200; ++i) {
    std::string account = "user" + std::to_string(i);
    EXPECT_EQ(a.addresses()[a.Pick(account)], b.addresses()[b.Pick(account)]);
  }
}

TEST(ShardPicker, SpreadsAccountsAndMovesFewOnGrowth) {
  ShardPicker two({"r1:7001", "r2:7001"});
  ShardPicker three({"r1:7001", "r2:7001", "r3:7001"});
  std::map<size_t, int> counts;
  int moved_elsewhere = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string account = "account-" + std::to_string(i);
    size_t before = two.Pick(account);
    size_t after = three.Pick(account);
    ++counts[after];
    // An account either stays or moves to the new shard, never between old ones.
    if (after != before && after != 2) {
      ++moved_elsewhere;
    }
  }
  EXPECT_EQ(moved_elsewhere, 0);
  for (const auto& [shard, n] : counts) {
    EXPECT_GT(n, 800) << shard;
  }
}

TEST(ShardPicker, OneShardTakesAll) {
  ShardPicker one({"only:7001"});
  EXPECT_EQ(one.Pick("anyone"), 0u);
}

}  // namespace
}  // namespace relay::gateway
