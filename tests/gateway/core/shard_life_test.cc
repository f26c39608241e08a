#include "gateway/core/shard_life.h"

#include "gtest/gtest.h"

namespace relay::gateway {
namespace {

using State = ShardLife::State;
using StopAction = ShardLife::StopAction;

// No jitter: each wait is the policy's own (its jitter is RelinkPolicy's test).
class ShardLifeTest : public ::testing::Test {
 protected:
  ShardLife life_{RelinkPolicy([] { return 1.0; })};
  absl::Time now_ = absl::FromUnixSeconds(1000000);

  // Begun, admitted over gRPC, announced and admitted on the link.
  void BringUp() {
    ASSERT_TRUE(life_.Begin());
    ASSERT_TRUE(life_.Admitted());
    life_.Announced();
    life_.Established(now_);
    ASSERT_EQ(life_.state(), State::kUp);
  }
  // Two refused admissions: the backoff stands at 200 ms.
  void BackOffTwice() {
    ASSERT_TRUE(life_.Begin());
    ASSERT_EQ(life_.AdmissionFailed(absl::StatusCode::kUnavailable), absl::Milliseconds(100));
    ASSERT_TRUE(life_.AlarmFired());
    ASSERT_EQ(life_.AdmissionFailed(absl::StatusCode::kUnavailable), absl::Milliseconds(200));
    ASSERT_TRUE(life_.AlarmFired());
  }
};

TEST_F(ShardLifeTest, AShardIsAdmittedThenLinkedThenUp) {
  EXPECT_EQ(life_.state(), State::kIdle);
  EXPECT_TRUE(life_.Begin());
  EXPECT_EQ(life_.state(), State::kAdmitting);
  EXPECT_TRUE(life_.Admitted());
  EXPECT_EQ(life_.state(), State::kLinking);
  EXPECT_FALSE(life_.up());  // calls wait for the router's own admission on the link
  life_.Established(now_);
  EXPECT_TRUE(life_.up());
  EXPECT_FALSE(life_.Begin());  // once only
}

TEST_F(ShardLifeTest, ARouterThatIsDownIsAskedAgainOnTheBackoff) {
  ASSERT_TRUE(life_.Begin());
  EXPECT_EQ(life_.AdmissionFailed(absl::StatusCode::kUnavailable), absl::Milliseconds(100));
  EXPECT_EQ(life_.state(), State::kWaiting);
  EXPECT_TRUE(life_.AlarmFired());
  EXPECT_EQ(life_.state(), State::kAdmitting);
  EXPECT_EQ(life_.AdmissionFailed(absl::StatusCode::kUnavailable), absl::Milliseconds(200));
  EXPECT_TRUE(life_.AlarmFired());
  EXPECT_TRUE(life_.Admitted());
}

TEST_F(ShardLifeTest, ARouterThatRefusesIsAskedOnceASecond) {
  ASSERT_TRUE(life_.Begin());
  EXPECT_EQ(life_.AdmissionFailed(absl::StatusCode::kPermissionDenied), absl::Seconds(1));
}

TEST_F(ShardLifeTest, ALinkThatHeldAndEndedIsTriedAgainSoon) {
  BackOffTwice();
  ASSERT_TRUE(life_.Admitted());
  life_.Established(now_);
  EXPECT_EQ(life_.LinkEnded(now_ + absl::Minutes(5)), absl::Milliseconds(100));
  EXPECT_EQ(life_.state(), State::kWaiting);
  EXPECT_FALSE(life_.up());
  EXPECT_TRUE(life_.AlarmFired());
}

TEST_F(ShardLifeTest, ALinkThatEndedSoonAfterItWasUpBacksOffFurther) {
  BackOffTwice();
  ASSERT_TRUE(life_.Admitted());
  life_.Established(now_);
  EXPECT_EQ(life_.LinkEnded(now_ + absl::Seconds(1)), absl::Milliseconds(400));
}

TEST_F(ShardLifeTest, ALinkThatFailsBeforeTheRouterAdmitsItBacksOff) {
  ASSERT_TRUE(life_.Begin());
  ASSERT_TRUE(life_.Admitted());
  EXPECT_EQ(life_.LinkEnded(now_), absl::Milliseconds(100));
  ASSERT_TRUE(life_.AlarmFired());
  ASSERT_TRUE(life_.Admitted());
  EXPECT_EQ(life_.LinkEnded(now_), absl::Milliseconds(200));
}

TEST_F(ShardLifeTest, StaleEventsChangeNothing) {
  ASSERT_TRUE(life_.Begin());
  EXPECT_FALSE(life_.AlarmFired());  // no alarm is set
  EXPECT_EQ(life_.LinkEnded(now_), std::nullopt);  // no link yet
  life_.Established(now_);  // no link yet: not taken as the start of one that held
  EXPECT_EQ(life_.state(), State::kAdmitting);
  ASSERT_TRUE(life_.Admitted());
  EXPECT_FALSE(life_.Admitted());  // one answer per admission
  EXPECT_EQ(life_.AdmissionFailed(absl::StatusCode::kUnavailable), std::nullopt);
  EXPECT_FALSE(life_.AlarmFired());
  EXPECT_EQ(life_.state(), State::kLinking);
  // The link fails before the router admits it: the Established above was not counted, so
  // this is a link that never held and the backoff starts.
  EXPECT_EQ(life_.LinkEnded(now_ + absl::Minutes(5)), absl::Milliseconds(100));
  life_.Established(now_);  // late, in kWaiting
  EXPECT_EQ(life_.state(), State::kWaiting);
  EXPECT_FALSE(life_.Begin());  // once only
}

TEST_F(ShardLifeTest, AnAlarmCancelledWithoutAStopLeavesNothingInFlight) {
  ASSERT_TRUE(life_.Begin());
  ASSERT_TRUE(life_.AdmissionFailed(absl::StatusCode::kUnavailable));
  life_.AlarmCancelled();  // its queue shut down
  EXPECT_EQ(life_.state(), State::kIdle);
  EXPECT_EQ(life_.Stop(), StopAction::kNone);
  EXPECT_TRUE(life_.stopped());
}

TEST_F(ShardLifeTest, StoppedBeforeItBeganItIsStoppedAtOnce) {
  EXPECT_EQ(life_.Stop(), StopAction::kNone);
  EXPECT_TRUE(life_.stopped());
  EXPECT_FALSE(life_.Begin());
}

TEST_F(ShardLifeTest, StoppedWhileAdmittingItWaitsForTheAnswerAndNeverConnects) {
  ASSERT_TRUE(life_.Begin());
  EXPECT_EQ(life_.Stop(), StopAction::kNone);
  EXPECT_FALSE(life_.stopped());  // the admission is still in flight
  EXPECT_FALSE(life_.Admitted());
  EXPECT_TRUE(life_.stopped());
}

TEST_F(ShardLifeTest, StoppedWhileAdmittingARefusalSetsNoAlarm) {
  ASSERT_TRUE(life_.Begin());
  life_.Stop();
  EXPECT_EQ(life_.AdmissionFailed(absl::StatusCode::kUnavailable), std::nullopt);
  EXPECT_TRUE(life_.stopped());
}

TEST_F(ShardLifeTest, StoppedWhileUpItClosesTheLinkAndSetsNoAlarmWhenItEnds) {
  BringUp();
  EXPECT_EQ(life_.Stop(), StopAction::kCloseLink);
  EXPECT_FALSE(life_.stopped());
  EXPECT_EQ(life_.Stop(), StopAction::kCloseLink);  // asked twice: the same answer
  EXPECT_EQ(life_.LinkEnded(now_), std::nullopt);
  EXPECT_TRUE(life_.stopped());
  EXPECT_EQ(life_.Stop(), StopAction::kNone);
  EXPECT_TRUE(life_.stopped());
}

TEST_F(ShardLifeTest, StoppedWhileLinkingItClosesTheLinkThatIsNeverUp) {
  ASSERT_TRUE(life_.Begin());
  ASSERT_TRUE(life_.Admitted());
  life_.Announced();
  EXPECT_EQ(life_.Stop(), StopAction::kCloseLink);
  life_.Established(now_);  // the router's admission raced the close
  EXPECT_FALSE(life_.up());
  EXPECT_EQ(life_.LinkEnded(now_), std::nullopt);
  EXPECT_TRUE(life_.stopped());
}

TEST_F(ShardLifeTest, AShardIsNotStoppedWhileItsLinkIsStillBeingAnnounced) {
  ASSERT_TRUE(life_.Begin());
  ASSERT_TRUE(life_.Admitted());  // the announcement to the sessions is under way
  EXPECT_EQ(life_.Stop(), StopAction::kCloseLink);
  EXPECT_EQ(life_.LinkEnded(now_), std::nullopt);  // the close ended the link at once
  EXPECT_FALSE(life_.stopped());
  life_.Announced();
  EXPECT_TRUE(life_.stopped());
}

TEST_F(ShardLifeTest, StoppedWhileWaitingItCancelsTheAlarm) {
  ASSERT_TRUE(life_.Begin());
  ASSERT_TRUE(life_.AdmissionFailed(absl::StatusCode::kUnavailable));
  EXPECT_EQ(life_.Stop(), StopAction::kCancelAlarm);
  EXPECT_FALSE(life_.stopped());
  life_.AlarmCancelled();
  EXPECT_TRUE(life_.stopped());
}

TEST_F(ShardLifeTest, AnAlarmThatFiresAsItIsCancelledLinksNoMore) {
  ASSERT_TRUE(life_.Begin());
  ASSERT_TRUE(life_.AdmissionFailed(absl::StatusCode::kUnavailable));
  life_.Stop();
  EXPECT_FALSE(life_.AlarmFired());
  EXPECT_TRUE(life_.stopped());
}

}  // namespace
}  // namespace relay::gateway
