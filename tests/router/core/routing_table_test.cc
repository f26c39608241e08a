#include "router/core/routing_table.h"

#include "gtest/gtest.h"

namespace relay::router {
namespace {

TabRecord Tab(uint64_t link, uint64_t id, const std::string& account) {
  TabRecord tab;
  tab.ref = TabRef{link, id};
  tab.account = account;
  return tab;
}

TEST(RoutingTable, AttachAndFind) {
  RoutingTable table;
  EXPECT_FALSE(table.Attach(Tab(1, 1, "alice")).has_value());
  EXPECT_EQ(table.Find("alice"), (TabRef{1, 1}));
  EXPECT_FALSE(table.Find("bob").has_value());
}

TEST(RoutingTable, NewerTabDisplacesTheOlder) {
  RoutingTable table;
  table.Attach(Tab(1, 1, "alice"));
  auto displaced = table.Attach(Tab(2, 9, "alice"));
  ASSERT_TRUE(displaced.has_value());
  EXPECT_EQ(displaced->ref, (TabRef{1, 1}));
  EXPECT_EQ(table.Find("alice"), (TabRef{2, 9}));
  // The displaced tab's later departure must not remove the new one.
  EXPECT_FALSE(table.Detach(TabRef{1, 1}));
  EXPECT_EQ(table.Find("alice"), (TabRef{2, 9}));
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
