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

TEST(RegistryTest, WithAKeyFindsThatKeysLiveSessionsOnly) {
  Registry<int> registry;
  const uint64_t session_a = RegistryKey("session a");
  const uint64_t session_b = RegistryKey("session b");
  ASSERT_NE(session_a, session_b);
  auto get_a = std::make_shared<int>(1);
  auto listen_a = std::make_shared<int>(2);
  auto get_b = std::make_shared<int>(3);
  auto tab = std::make_shared<int>(4);  // added without a key
  uint64_t get_a_id = registry.Add(get_a, 0, session_a);
  registry.Add(listen_a, 1, session_a);
  registry.Add(get_b, 0, session_b);
  registry.Add(tab, 0);

  auto of_a = registry.WithKey(session_a);
  ASSERT_EQ(of_a.size(), 2u);
  EXPECT_EQ(*of_a[0] + *of_a[1], 3);
  ASSERT_EQ(registry.WithKey(session_b).size(), 1u);
  EXPECT_EQ(*registry.WithKey(session_b)[0], 3);
  EXPECT_TRUE(registry.WithKey(RegistryKey("session c")).empty());

  // A removed session leaves its key's list, and only it.
  of_a.clear();
  registry.Remove(get_a_id);
  of_a = registry.WithKey(session_a);
  ASSERT_EQ(of_a.size(), 1u);
  EXPECT_EQ(*of_a[0], 2);
  registry.Remove(get_a_id);  // twice: nothing happens
  EXPECT_EQ(registry.WithKey(session_a).size(), 1u);
  // A gone one is not handed out.
  of_a.clear();
  listen_a.reset();
  EXPECT_TRUE(registry.WithKey(session_a).empty());
  EXPECT_EQ(registry.Snapshot().size(), 2u);  // session b's stream and the tab
}

}  // namespace
}  // namespace relay::gateway
