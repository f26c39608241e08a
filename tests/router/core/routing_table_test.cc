#include "router/core/routing_table.h"

#include "gtest/gtest.h"

namespace relay::router {
namespace {

TabRecord Tab(uint64_t link, uint64_t id, const std::string& account, uint64_t generation = 0) {
  TabRecord tab;
  tab.ref = TabRef{link, id};
  tab.account = account;
  tab.generation = generation;
  return tab;
}

TEST(RoutingTable, AttachAndFind) {
  RoutingTable table;
  AttachResult attached = table.Attach(Tab(1, 1, "alice"));
  EXPECT_TRUE(attached.attached);
  EXPECT_FALSE(attached.displaced.has_value());
  EXPECT_EQ(table.Find("alice"), (TabRef{1, 1}));
  EXPECT_FALSE(table.Find("bob").has_value());
}

// What /metrics and GetStats report: one per account that has a tab.
TEST(RoutingTable, SizeCountsTheAccountsThatHaveATab) {
  RoutingTable table;
  EXPECT_EQ(table.size(), 0u);
  table.Attach(Tab(1, 1, "alice"));
  table.Attach(Tab(1, 2, "bob"));
  EXPECT_EQ(table.size(), 2u);
  table.Attach(Tab(2, 3, "alice"));  // displaces alice's first tab: still one for alice
  EXPECT_EQ(table.size(), 2u);
  table.Attach(Tab(1, 2, "bob"));  // the same tab announced again
  EXPECT_EQ(table.size(), 2u);
  table.Detach(TabRef{1, 1});  // already displaced: nothing changes
  EXPECT_EQ(table.size(), 2u);
  table.DetachLink(1);
  EXPECT_EQ(table.size(), 1u);
  EXPECT_EQ(table.size(), table.List("").size());
}

TEST(RoutingTable, NewerTabDisplacesTheOlder) {
  RoutingTable table;
  table.Attach(Tab(1, 1, "alice"));
  auto displaced = table.Attach(Tab(2, 9, "alice")).displaced;
  ASSERT_TRUE(displaced.has_value());
  EXPECT_EQ(displaced->ref, (TabRef{1, 1}));
  EXPECT_EQ(table.Find("alice"), (TabRef{2, 9}));
  // The displaced tab's later departure must not remove the new one.
  EXPECT_FALSE(table.Detach(TabRef{1, 1}));
  EXPECT_EQ(table.Find("alice"), (TabRef{2, 9}));
}

// A gateway that lost its link (and the Displace with it) relinks and
// announces the person's old tab again after a newer one attached elsewhere:
// the newer one keeps the account, the old one is the one displaced.
TEST(RoutingTable, AnOlderTabAnnouncedLaterDoesNotDisplaceANewerOne) {
  RoutingTable table;
  table.Attach(Tab(2, 9, "alice", /*generation=*/200));
  AttachResult late = table.Attach(Tab(1, 1, "alice", /*generation=*/100));
  EXPECT_FALSE(late.attached);
  ASSERT_TRUE(late.displaced.has_value());
  EXPECT_EQ(late.displaced->ref, (TabRef{1, 1}));
  EXPECT_EQ(table.Find("alice"), (TabRef{2, 9}));
  EXPECT_FALSE(table.AccountOf(TabRef{1, 1}).has_value());
}

// A tab came back with its resume credential on gateway 2 (its generation
// kept, admitted later) while gateway 1 still held its old connection; gateway
// 1 relinks and announces that stale connection again: the resumed one keeps
// the account, whichever came last. A newer tab still beats any resume.
TEST(RoutingTable, OfOneGenerationTheConnectionAdmittedLaterHoldsTheAccount) {
  RoutingTable table;
  TabRecord resumed = Tab(2, 9, "alice", /*generation=*/100);
  resumed.resumed_at = 1'000;
  table.Attach(resumed);
  AttachResult stale = table.Attach(Tab(1, 1, "alice", /*generation=*/100));
  EXPECT_FALSE(stale.attached);
  ASSERT_TRUE(stale.displaced.has_value());
  EXPECT_EQ(stale.displaced->ref, (TabRef{1, 1}));
  EXPECT_EQ(table.Find("alice"), (TabRef{2, 9}));

  TabRecord resumed_again = Tab(3, 4, "alice", /*generation=*/100);
  resumed_again.resumed_at = 2'000;
  EXPECT_TRUE(table.Attach(resumed_again).attached);
  AttachResult newer = table.Attach(Tab(1, 2, "alice", /*generation=*/101));
  EXPECT_TRUE(newer.attached);
  ASSERT_TRUE(newer.displaced.has_value());
  EXPECT_EQ(newer.displaced->ref, (TabRef{3, 4}));
}

TEST(RoutingTable, TheSameTabAnnouncedAgainKeepsItsPlace) {
  RoutingTable table;
  table.Attach(Tab(1, 1, "alice", 100));
  AttachResult again = table.Attach(Tab(1, 1, "alice", 100));
  EXPECT_TRUE(again.attached);
  EXPECT_FALSE(again.displaced.has_value());
  EXPECT_EQ(table.Find("alice"), (TabRef{1, 1}));
}

TEST(RoutingTable, DetachRemovesOnlyThatTab) {
  RoutingTable table;
  table.Attach(Tab(1, 1, "alice"));
  table.Attach(Tab(1, 2, "bob"));
  EXPECT_TRUE(table.Detach(TabRef{1, 1}));
  EXPECT_FALSE(table.Find("alice").has_value());
  EXPECT_TRUE(table.Find("bob").has_value());
}

TEST(RoutingTable, DetachLinkRemovesAllItsTabs) {
  RoutingTable table;
  table.Attach(Tab(1, 1, "alice"));
  table.Attach(Tab(1, 2, "bob"));
  table.Attach(Tab(2, 1, "carol"));
  auto gone = table.DetachLink(1);
  EXPECT_EQ(gone.size(), 2u);
  EXPECT_FALSE(table.Find("alice").has_value());
  EXPECT_FALSE(table.Find("bob").has_value());
  EXPECT_TRUE(table.Find("carol").has_value());
}

TEST(RoutingTable, ListIsSortedAndFiltered) {
  RoutingTable table;
  table.Attach(Tab(1, 1, "zed"));
  table.Attach(Tab(1, 2, "amy"));
  auto all = table.List("");
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].account, "amy");
  EXPECT_EQ(table.List("zed").size(), 1u);
}

}  // namespace
}  // namespace relay::router
