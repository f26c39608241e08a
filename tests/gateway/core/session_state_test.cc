#include "gateway/core/session_state.h"

#include <gtest/gtest.h>

namespace relay::gateway {
namespace {

TEST(EndedSessionsTest, RemembersEndedSessionsOldestForgottenFirst) {
  EndedSessions ended(/*capacity=*/2);
  ended.Add("s1");
  ended.Add("s2");
  ended.Add("s1");  // again: no second place in the order
  EXPECT_TRUE(ended.Contains("s1"));
  EXPECT_TRUE(ended.Contains("s2"));
  EXPECT_FALSE(ended.Contains("s3"));
  ended.Add("s3");
  EXPECT_FALSE(ended.Contains("s1"));
  EXPECT_TRUE(ended.Contains("s2"));
  EXPECT_TRUE(ended.Contains("s3"));
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
