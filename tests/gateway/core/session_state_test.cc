#include "gateway/core/session_state.h"

#include <gtest/gtest.h>

namespace relay::gateway {
namespace {

TEST(EndedSessionsTest, RemembersEndedSessionsOldestOfTheAccountForgottenFirst) {
  EndedSessions ended(/*per_account=*/2);
  ended.Add("v1.alice.n1.m");
  ended.Add("v1.alice.n2.m");
  ended.Add("v1.alice.n1.m");  // again: no second place in the order
  EXPECT_TRUE(ended.Contains("v1.alice.n1.m"));
  EXPECT_TRUE(ended.Contains("v1.alice.n2.m"));
  EXPECT_FALSE(ended.Contains("v1.alice.n3.m"));
  ended.Add("v1.alice.n3.m");
  EXPECT_FALSE(ended.Contains("v1.alice.n1.m"));
  EXPECT_TRUE(ended.Contains("v1.alice.n2.m"));
  EXPECT_TRUE(ended.Contains("v1.alice.n3.m"));
}

TEST(EndedSessionsTest, OneAccountsFloodNeverRevivesAnotherAccountsEndedSession) {
  EndedSessions ended(/*per_account=*/4, /*accounts=*/100);
  ended.Add("v1.bob.victim.m");
  // Mallory's initialize+DELETE loop.
  for (int i = 0; i < 10000; ++i) {
    ended.Add("v1.mallory.n" + std::to_string(i) + ".m");
  }
  EXPECT_TRUE(ended.Contains("v1.bob.victim.m"));
  EXPECT_TRUE(ended.Contains("v1.mallory.n9999.m"));
  EXPECT_FALSE(ended.Contains("v1.mallory.n0.m"));  // only its own are forgotten
}

TEST(EndedSessionsTest, OverTheAccountBoundTheLeastRecentAccountIsForgotten) {
  EndedSessions ended(/*per_account=*/4, /*accounts=*/2);
  ended.Add("v1.a.n1.m");
  ended.Add("v1.b.n1.m");
  ended.Add("v1.a.n2.m");  // a is now the more recent
  ended.Add("v1.c.n1.m");  // over the bound: b goes
  EXPECT_TRUE(ended.Contains("v1.a.n1.m"));
  EXPECT_TRUE(ended.Contains("v1.a.n2.m"));
  EXPECT_FALSE(ended.Contains("v1.b.n1.m"));
  EXPECT_TRUE(ended.Contains("v1.c.n1.m"));
}

TEST(TouchThrottleTest, OncePerIntervalPerSession) {
  const absl::Time now = absl::FromUnixSeconds(1000);
  TouchThrottle touches(absl::Seconds(5));
  EXPECT_TRUE(touches.ShouldTouch("a", now));
  EXPECT_FALSE(touches.ShouldTouch("a", now + absl::Seconds(4)));
  EXPECT_TRUE(touches.ShouldTouch("b", now + absl::Seconds(4)));
  EXPECT_TRUE(touches.ShouldTouch("a", now + absl::Seconds(5)));
  EXPECT_FALSE(touches.ShouldTouch("a", now + absl::Seconds(9)));
}

TEST(TouchThrottleTest, BoundedForgettingCostsOneExtraTouch) {
  const absl::Time now = absl::FromUnixSeconds(1000);
  TouchThrottle touches(absl::Seconds(5), /*capacity=*/2);
  EXPECT_TRUE(touches.ShouldTouch("a", now));
  EXPECT_TRUE(touches.ShouldTouch("b", now));
  EXPECT_TRUE(touches.ShouldTouch("c", now));  // full: everything forgotten, c kept
  EXPECT_FALSE(touches.ShouldTouch("c", now + absl::Seconds(1)));
  EXPECT_TRUE(touches.ShouldTouch("a", now + absl::Seconds(1)));  // forgotten: touched again
}

}  // namespace
}  // namespace relay::gateway
