#include "gateway/core/relink_policy.h"

#include "gtest/gtest.h"

namespace relay::gateway {
namespace {

// No jitter (a factor of 1) unless a test sets one.
class RelinkPolicyTest : public ::testing::Test {
 protected:
  double factor_ = 1.0;
  RelinkPolicy policy_{[this] { return factor_; }};
  absl::Time now_ = absl::FromUnixSeconds(1000000);
};

TEST_F(RelinkPolicyTest, ARouterThatIsDownIsTriedOnABackoffDoublingToASecond) {
  EXPECT_EQ(policy_.AfterAdmissionFailed(absl::StatusCode::kUnavailable), absl::Milliseconds(100));
  EXPECT_EQ(policy_.AfterAdmissionFailed(absl::StatusCode::kUnavailable), absl::Milliseconds(200));
  EXPECT_EQ(policy_.AfterAdmissionFailed(absl::StatusCode::kDeadlineExceeded), absl::Milliseconds(400));
  EXPECT_EQ(policy_.AfterAdmissionFailed(absl::StatusCode::kUnavailable), absl::Milliseconds(800));
  EXPECT_EQ(policy_.AfterAdmissionFailed(absl::StatusCode::kUnavailable), absl::Seconds(1));
  EXPECT_EQ(policy_.AfterAdmissionFailed(absl::StatusCode::kUnavailable), absl::Seconds(1));
}

TEST_F(RelinkPolicyTest, ARouterThatRefusesIsAskedOnceASecond) {
  EXPECT_EQ(policy_.AfterAdmissionFailed(absl::StatusCode::kPermissionDenied), absl::Seconds(1));
  EXPECT_EQ(policy_.AfterAdmissionFailed(absl::StatusCode::kUnauthenticated), absl::Seconds(1));
}

TEST_F(RelinkPolicyTest, ALinkThatHeldAWhileIsTriedAgainSoon) {
  policy_.AfterAdmissionFailed(absl::StatusCode::kUnavailable);
  policy_.AfterAdmissionFailed(absl::StatusCode::kUnavailable);  // 200 ms by now
  policy_.Established(now_);
  EXPECT_EQ(policy_.AfterLinkEnded(now_ + absl::Minutes(10)), absl::Milliseconds(100));
  // And the backoff starts over: the next failure waits 200 ms, not 400.
  EXPECT_EQ(policy_.AfterAdmissionFailed(absl::StatusCode::kUnavailable), absl::Milliseconds(200));
}

TEST_F(RelinkPolicyTest, ALinkThatFailsAtOnceIsNotHammered) {
  for (absl::Duration want : {absl::Milliseconds(100), absl::Milliseconds(200),
                              absl::Milliseconds(400), absl::Milliseconds(800), absl::Seconds(1)}) {
    policy_.Established(now_);
    now_ += absl::Milliseconds(50);  // admitted, then its link failed at once
    EXPECT_EQ(policy_.AfterLinkEnded(now_), want);
  }
}

TEST_F(RelinkPolicyTest, ALinkThatNeverOpenedCountsAsFailingAtOnce) {
  // No Established: the link ended before the router admitted it.
  EXPECT_EQ(policy_.AfterLinkEnded(now_), absl::Milliseconds(100));
  EXPECT_EQ(policy_.AfterLinkEnded(now_ + absl::Hours(1)), absl::Milliseconds(200));
}

TEST_F(RelinkPolicyTest, HeldIsJudgedFromTheLastAdmission) {
  policy_.Established(now_);
  EXPECT_EQ(policy_.AfterLinkEnded(now_ + absl::Seconds(4)), absl::Milliseconds(100));  // short
  policy_.Established(now_ + absl::Seconds(10));
  EXPECT_EQ(policy_.AfterLinkEnded(now_ + absl::Seconds(14)), absl::Milliseconds(200));  // short again
  policy_.Established(now_ + absl::Seconds(20));
  EXPECT_EQ(policy_.AfterLinkEnded(now_ + absl::Seconds(25)), absl::Milliseconds(100));  // held 5 s
}

TEST_F(RelinkPolicyTest, EveryWaitIsJittered) {
  factor_ = 0.5;
  EXPECT_EQ(policy_.AfterAdmissionFailed(absl::StatusCode::kUnavailable), absl::Milliseconds(50));
  factor_ = 1.49;
  EXPECT_EQ(policy_.AfterAdmissionFailed(absl::StatusCode::kUnavailable), absl::Milliseconds(298));
}

TEST(RelinkPolicyRandomJitterTest, StaysWithinHalfAndOneAndAHalf) {
  RelinkPolicy::Jitter jitter = RelinkPolicy::RandomJitter();
  double low = 2, high = 0;
  for (int i = 0; i < 10000; ++i) {
    double f = jitter();
    low = std::min(low, f);
    high = std::max(high, f);
  }
  EXPECT_GE(low, 0.5);
  EXPECT_LT(high, 1.5);
  EXPECT_LT(low, 0.6);   // it does spread: the gateways of a fleet come back apart
  EXPECT_GT(high, 1.4);
}

}  // namespace
}  // namespace relay::gateway
