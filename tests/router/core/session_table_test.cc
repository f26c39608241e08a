#include "router/core/session_table.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace relay::router {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

class SessionTableTest : public ::testing::Test {
 protected:
  absl::Time t0_ = absl::FromUnixSeconds(1000000);
  SessionTable table_;
};

TEST_F(SessionTableTest, ANewSessionCountsAndReportsTheChange) {
  EXPECT_THAT(table_.Touch("s1", "alice", t0_), ElementsAre("alice"));
  EXPECT_EQ(table_.AgentCount("alice", t0_), 1u);
  // Another request of the same session changes nothing.
  EXPECT_THAT(table_.Touch("s1", "alice", t0_ + absl::Seconds(1)), IsEmpty());
  EXPECT_THAT(table_.Touch("s2", "alice", t0_), ElementsAre("alice"));
  EXPECT_EQ(table_.AgentCount("alice", t0_), 2u);
  EXPECT_EQ(table_.AgentCount("bob", t0_), 0u);
}

TEST_F(SessionTableTest, AnIdleSessionDropsOutAfterAMinuteUnlessItHoldsAStream) {
  table_.Touch("s1", "alice", t0_);
  std::vector<std::string> changed;
  table_.OpenStream("s2", "alice", StreamRef{1, 7}, 0, t0_, &changed);
  EXPECT_THAT(table_.Sweep(t0_ + absl::Seconds(59)), IsEmpty());
  EXPECT_THAT(table_.Sweep(t0_ + absl::Seconds(61)), ElementsAre("alice"));
  EXPECT_EQ(table_.AgentCount("alice", t0_ + absl::Seconds(61)), 1u);
  // The stream closes: it counts for another minute from then.
  table_.CloseStream("s2", StreamRef{1, 7}, t0_ + absl::Seconds(70));
  EXPECT_EQ(table_.AgentCount("alice", t0_ + absl::Seconds(129)), 1u);
  EXPECT_THAT(table_.Sweep(t0_ + absl::Seconds(131)), ElementsAre("alice"));
  EXPECT_EQ(table_.AgentCount("alice", t0_ + absl::Seconds(131)), 0u);
}

TEST_F(SessionTableTest, EndRemovesAtOnceAndStaysEnded) {
  table_.Touch("s1", "alice", t0_);
  EXPECT_THAT(table_.End("s1"), ElementsAre("alice"));
  EXPECT_TRUE(table_.IsEnded("s1"));
  EXPECT_EQ(table_.AgentCount("alice", t0_), 0u);
  // An ended session is not brought back by a late request.
  EXPECT_THAT(table_.Touch("s1", "alice", t0_), IsEmpty());
  EXPECT_EQ(table_.AgentCount("alice", t0_), 0u);
}

TEST_F(SessionTableTest, SubscribersOnlyAndReplayAfterLastEventId) {
  table_.Touch("s1", "alice", t0_);
  table_.Touch("s2", "alice", t0_);
  table_.Subscribe("s1", "alice", "editor://view", true, t0_);
  std::vector<std::string> changed;
  table_.OpenStream("s1", "alice", StreamRef{1, 1}, 0, t0_, &changed);
  table_.OpenStream("s2", "alice", StreamRef{1, 2}, 0, t0_, &changed);
  auto first = table_.ToSubscribers("alice", "editor://view", "m1");
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].stream, (StreamRef{1, 1}));
  table_.CloseStream("s1", StreamRef{1, 1}, t0_);
  EXPECT_TRUE(table_.ToSubscribers("alice", "editor://view", "m2").empty());  // buffered only
  auto replay = table_.OpenStream("s1", "alice", StreamRef{2, 9}, first[0].event_id, t0_, &changed);
  ASSERT_EQ(replay.size(), 1u);
  EXPECT_EQ(replay[0].message, "m2");
  EXPECT_EQ(replay[0].stream, (StreamRef{2, 9}));
}

TEST_F(SessionTableTest, LogLevelFiltersAccountWideMessages) {
  table_.Touch("s1", "alice", t0_);
  table_.Touch("s2", "alice", t0_);
  std::vector<std::string> changed;
  table_.OpenStream("s1", "alice", StreamRef{1, 1}, 0, t0_, &changed);
  table_.OpenStream("s2", "alice", StreamRef{1, 2}, 0, t0_, &changed);
  table_.SetLogLevel("s1", "alice", LogLevelRank("warning"), t0_);
  EXPECT_TRUE(table_.ToLogLevel("alice", LogLevelRank("info"), "x").empty());
  EXPECT_EQ(table_.ToLogLevel("alice", LogLevelRank("error"), "x").size(), 1u);
}

TEST_F(SessionTableTest, PendingLineIsTakenOncePerSession) {
  table_.Touch("s1", "alice", t0_);
  table_.Touch("s2", "alice", t0_);
  table_.Touch("s3", "bob", t0_);
  table_.SetPendingLine("alice", "The view changed.");
  EXPECT_EQ(table_.TakePendingLine("s1"), "The view changed.");
  EXPECT_EQ(table_.TakePendingLine("s1"), "");
  EXPECT_EQ(table_.TakePendingLine("s2"), "The view changed.");
  EXPECT_EQ(table_.TakePendingLine("s3"), "");
}

TEST_F(SessionTableTest, ALinkEndingClosesItsStreams) {
  std::vector<std::string> changed;
  table_.OpenStream("s1", "alice", StreamRef{4, 1}, 0, t0_, &changed);
  table_.CloseLink(4, t0_);
  EXPECT_TRUE(table_.Broadcast("alice", "m").empty());
}

}  // namespace
}  // namespace relay::router

namespace relay::router {
namespace {

TEST(SessionTableLimitsTest, AnAccountKeepsAtMostItsSessionRecordsForgettingTheLeastRecent) {
  SessionTableOptions options;
  options.max_sessions_per_account = 3;
  SessionTable table(options);
  absl::Time t0 = absl::FromUnixSeconds(1000000);
  std::vector<std::string> changed;
  table.OpenStream("streaming", "alice", StreamRef{1, 1}, 0, t0, &changed);
  for (int i = 0; i < 10; ++i) {
    table.Touch("s" + std::to_string(i), "alice", t0 + absl::Seconds(i + 1));
  }
  table.Touch("b1", "bob", t0);
  // Three records for alice: the stream's and the two most recent; bob untouched.
  auto alice = table.List("alice", t0 + absl::Seconds(20));
  ASSERT_EQ(alice.size(), 3u);
  EXPECT_EQ(alice[0].session, "s8");
  EXPECT_EQ(alice[1].session, "s9");
  EXPECT_EQ(alice[2].session, "streaming");
  EXPECT_EQ(table.List("bob", t0).size(), 1u);
}

TEST(SessionTableLimitsTest, SubscriptionsPerSessionAreBounded) {
  SessionTableOptions options;
  options.max_subscriptions = 2;
  SessionTable table(options);
  absl::Time t0 = absl::FromUnixSeconds(1000000);
  for (const char* uri : {"a", "b", "c"}) {
    table.Subscribe("s1", "alice", uri, true, t0);
  }
  EXPECT_EQ(table.List("alice", t0)[0].subscriptions, 2u);
  EXPECT_TRUE(table.ToSubscribers("alice", "c", "m").empty());
}

TEST(SessionTableLimitsTest, TheReplayBufferIsBoundedInBytes) {
  SessionTableOptions options;
  options.replay_bytes = 1000;
  SessionTable table(options);
  absl::Time t0 = absl::FromUnixSeconds(1000000);
  table.Touch("s1", "alice", t0);
  for (int i = 0; i < 10; ++i) {
    table.Broadcast("alice", std::string(300, 'x'));
  }
  std::vector<std::string> changed;
  auto replay = table.OpenStream("s1", "alice", StreamRef{1, 1}, 1, t0, &changed);
  // 1000 bytes hold three 300-byte events: the last three.
  ASSERT_EQ(replay.size(), 3u);
  EXPECT_EQ(replay[0].event_id, 8u);
  EXPECT_EQ(replay[2].event_id, 10u);
}

}  // namespace
}  // namespace relay::router
