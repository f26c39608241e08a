#include "gateway/core/rate_limiter.h"

#include "gtest/gtest.h"

namespace relay::gateway {
namespace {

TEST(RateLimiter, AllowsABurstThenTheRate) {
  RateLimiter limiter(/*per_second=*/10, /*burst=*/3);
  absl::Time t = absl::FromUnixSeconds(100);
  EXPECT_TRUE(limiter.Allow(t));
  EXPECT_TRUE(limiter.Allow(t));
  EXPECT_TRUE(limiter.Allow(t));
  EXPECT_FALSE(limiter.Allow(t));
  EXPECT_TRUE(limiter.Allow(t + absl::Milliseconds(100)));  // one token back
  EXPECT_FALSE(limiter.Allow(t + absl::Milliseconds(100)));
}

TEST(RateLimiter, RefillsNoMoreThanTheBurst) {
  RateLimiter limiter(10, 2);
  absl::Time t = absl::FromUnixSeconds(100);
  limiter.Allow(t);
  t += absl::Hours(1);
  EXPECT_TRUE(limiter.Allow(t));
  EXPECT_TRUE(limiter.Allow(t));
  EXPECT_FALSE(limiter.Allow(t));
}

}  // namespace
}  // namespace relay::gateway
