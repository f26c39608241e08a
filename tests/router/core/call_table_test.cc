#include "router/core/call_table.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace relay::router {
namespace {

using ::testing::SizeIs;

Call MakeCall(TabRef tab, CallOrigin origin, std::string account, std::string request_id = "",
              std::string progress = "") {
  Call call;
  call.tab = tab;
  call.origin = origin;
  call.account = std::move(account);
  call.session = "s";
  call.request_id = std::move(request_id);
  call.progress_token = std::move(progress);
  return call;
}

// Issue 25.7: ids start at a random point, not the wall clock, and however
// the dice fall they leave room to count up below 2^53 (JavaScript's exact
// integers).
TEST(CallTableTest, FirstIdsAreSpreadAndLeaveRoomBelowTwoToThe53) {
  constexpr uint64_t kExact = uint64_t{1} << 53;
  EXPECT_EQ(FirstCallId(0), uint64_t{1} << 51);
  EXPECT_LT(FirstCallId(~uint64_t{0}) + (uint64_t{1} << 51), kExact);
  EXPECT_NE(FirstCallId(0x0123456789abcdefULL), FirstCallId(0x0123456789abdcefULL));
}

TEST(CallTableTest, IdsCountUpAndEveryIndexFindsTheCall) {
  CallTable table(100);
  uint64_t id = table.Add(MakeCall({1, 5}, {2, 9}, "alice", "7", "p"));
  EXPECT_EQ(id, 100u);
  EXPECT_EQ(table.Add(MakeCall({1, 5}, {2, 10}, "alice")), 101u);
  EXPECT_EQ(table.FindByOrigin({2, 9}), id);
  EXPECT_EQ(table.FindByRequest("s", "7"), id);
  EXPECT_EQ(table.FindByProgressToken("p"), id);
  EXPECT_EQ(table.InFlight(TabRef{1, 5}), 2u);
  EXPECT_EQ(table.InFlightOf("alice"), 2u);
}

TEST(CallTableTest, TakingACallRemovesItFromEveryIndexOnce) {
  CallTable table(1);
  uint64_t id = table.Add(MakeCall({1, 5}, {2, 9}, "alice", "7", "p"));
  ASSERT_TRUE(table.Take(id).has_value());
  EXPECT_FALSE(table.Take(id).has_value());
  EXPECT_EQ(table.FindByOrigin({2, 9}), 0u);
  EXPECT_EQ(table.FindByRequest("s", "7"), 0u);
  EXPECT_EQ(table.FindByProgressToken("p"), 0u);
  EXPECT_EQ(table.InFlightOf("alice"), 0u);
  EXPECT_EQ(table.size(), 0u);
}

TEST(CallTableTest, TakeAllOfATabOrFromALinkLeavesTheOthers) {
  CallTable table(1);
  table.Add(MakeCall({1, 5}, {2, 1}, "alice"));
  table.Add(MakeCall({1, 5}, {3, 1}, "alice"));
  table.Add(MakeCall({1, 6}, {2, 2}, "bob"));
  EXPECT_THAT(table.TakeAllOf(TabRef{1, 5}), SizeIs(2));
  EXPECT_EQ(table.size(), 1u);
  EXPECT_THAT(table.TakeAllFrom(2), SizeIs(1));
  EXPECT_EQ(table.size(), 0u);
}

TEST(CallTableTest, AReusedRequestIdNamesTheNewestCallUntilItEnds) {
  CallTable table(1);
  uint64_t older = table.Add(MakeCall({1, 5}, {2, 1}, "alice", "3"));
  uint64_t newer = table.Add(MakeCall({1, 5}, {2, 2}, "alice", "3"));
  EXPECT_EQ(table.FindByRequest("s", "3"), newer);
  table.Take(older);  // must not erase the newer call's entry
  EXPECT_EQ(table.FindByRequest("s", "3"), newer);
  table.Take(newer);
  EXPECT_EQ(table.FindByRequest("s", "3"), 0u);
}

}  // namespace
}  // namespace relay::router
