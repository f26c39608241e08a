#include "gateway/core/keepalive_phase.h"

#include <algorithm>
#include <chrono>

#include "gtest/gtest.h"

namespace relay::gateway {
namespace {

using std::chrono::milliseconds;

TEST(KeepAlivePhaseTest, TheFirstTickFallsInTheSecondHalfOfThePeriod) {
  EXPECT_EQ(KeepAlivePhase::First(milliseconds(25000), 0.0), milliseconds(12500));
  EXPECT_EQ(KeepAlivePhase::First(milliseconds(25000), 0.5), milliseconds(18750));
  EXPECT_EQ(KeepAlivePhase::First(milliseconds(25000), 0.99996), milliseconds(24999));
  // An odd period: the half rounds down, the first tick never passes the period.
  EXPECT_EQ(KeepAlivePhase::First(milliseconds(25), 0.0), milliseconds(12));
  EXPECT_EQ(KeepAlivePhase::First(milliseconds(25), 0.99), milliseconds(24));
}

TEST(KeepAlivePhaseTest, ADrawOutsideItsRangeStaysWithinThePeriod) {
  EXPECT_EQ(KeepAlivePhase::First(milliseconds(15000), -1.0), milliseconds(7500));
  EXPECT_EQ(KeepAlivePhase::First(milliseconds(15000), 1.0), milliseconds(15000));
  EXPECT_EQ(KeepAlivePhase::First(milliseconds(15000), 7.0), milliseconds(15000));
}

// The thread's generator spreads connections that arrive together over the
// half period (a storm of 1,000: the chance that none falls in its first fifth,
// or none in its last, is 2 x 0.8^1000, never).
TEST(KeepAlivePhaseTest, ConnectionsArrivingTogetherAreSpreadOverHalfAPeriod) {
  const milliseconds period(25000);
  milliseconds earliest = period, latest(0);
  for (int i = 0; i < 1000; ++i) {
    const milliseconds first = KeepAlivePhase::First(period);
    ASSERT_GE(first, period / 2);
    ASSERT_LE(first, period);
    earliest = std::min(earliest, first);
    latest = std::max(latest, first);
  }
  EXPECT_LT(earliest, milliseconds(15000));
  EXPECT_GT(latest, milliseconds(22500));
}

}  // namespace
}  // namespace relay::gateway
