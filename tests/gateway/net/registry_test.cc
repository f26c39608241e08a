#include "gateway/net/registry.h"

#include <memory>

#include <gtest/gtest.h>

namespace relay::gateway {
namespace {

TEST(RegistryTest, ASnapshotOfAGroupHasItsLiveSessionsOnly) {
  Registry<int> registry;
  auto a = std::make_shared<int>(1);  // shard 0
  auto b = std::make_shared<int>(2);  // shard 1
  auto c = std::make_shared<int>(3);  // shard 1, gone before the snapshot
  registry.Add(a, 0);
  uint64_t b_id = registry.Add(b, 1);
  registry.Add(c, 1);
  c.reset();

  auto shard1 = registry.Snapshot(1);
  ASSERT_EQ(shard1.size(), 1u);
  EXPECT_EQ(*shard1[0], 2);
  EXPECT_EQ(registry.Snapshot(0).size(), 1u);
  EXPECT_EQ(registry.Snapshot().size(), 2u);  // every group
  EXPECT_EQ(registry.Snapshot(7).size(), 0u);

  registry.Remove(b_id);
  EXPECT_TRUE(registry.Snapshot(1).empty());
  EXPECT_EQ(registry.Find(b_id), nullptr);
}

}  // namespace
}  // namespace relay::gateway
