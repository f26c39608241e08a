#include "authsvc/tab_order.h"

#include <gtest/gtest.h>

namespace relay::authsvc {
namespace {

TEST(TabOrderTest, FollowsTheWallClock) {
  TabOrder order;
  absl::Time t = absl::FromUnixSeconds(1'800'000'000);
  EXPECT_EQ(order.Next(t), static_cast<uint64_t>(absl::ToUnixMicros(t)));
  EXPECT_EQ(order.Next(t + absl::Seconds(1)),
            static_cast<uint64_t>(absl::ToUnixMicros(t + absl::Seconds(1))));
}

TEST(TabOrderTest, NeverRepeatsOrGoesBackWhenTheClockDoes) {
  TabOrder order;
  absl::Time t = absl::FromUnixSeconds(1'800'000'000);
  uint64_t first = order.Next(t);
  uint64_t same_instant = order.Next(t);
  uint64_t clock_stepped_back = order.Next(t - absl::Minutes(5));
  EXPECT_GT(same_instant, first);
  EXPECT_GT(clock_stepped_back, same_instant);
}

}  // namespace
}  // namespace relay::authsvc
