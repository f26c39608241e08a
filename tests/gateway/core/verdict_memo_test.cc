#include "gateway/core/verdict_memo.h"

#include "gtest/gtest.h"

namespace relay::gateway {
namespace {

AuthVerdict Ok(const std::string& user) { return AuthVerdict{AuthVerdict::Kind::kOk, user, "user", 0}; }

class VerdictMemoTest : public ::testing::Test {
 protected:
  VerdictMemoTest() { memo_.SetWatched(true, t0_); }
  absl::Time t0_ = absl::FromUnixSeconds(1000000);
  VerdictMemo memo_;
};

TEST_F(VerdictMemoTest, KeepsAVerdictForAsLongAsAuthsvcSaid) {
  memo_.Put("h1", Ok("alice"), absl::Seconds(5), memo_.Epoch(), t0_);
  memo_.Heard(t0_ + absl::Seconds(4));  // authsvc's beats
  ASSERT_TRUE(memo_.Find("h1", t0_ + absl::Seconds(4)).has_value());
  EXPECT_EQ(memo_.Find("h1", t0_ + absl::Seconds(4))->user, "alice");
  EXPECT_FALSE(memo_.Find("h1", t0_ + absl::Seconds(5)).has_value());
  EXPECT_FALSE(memo_.Find("h2", t0_).has_value());
}

TEST_F(VerdictMemoTest, KeepsNoLockOutsFailuresOrZeroTimes) {
  AuthVerdict locked{AuthVerdict::Kind::kLockedOut, "", "", 30};
  memo_.Put("h1", locked, absl::Seconds(5), memo_.Epoch(), t0_);
  memo_.Put("h2", AuthVerdict{}, absl::Seconds(5), memo_.Epoch(), t0_);  // unavailable
  memo_.Put("h3", Ok("alice"), absl::ZeroDuration(), memo_.Epoch(), t0_);
  EXPECT_EQ(memo_.size(), 0u);
  // A "no" is kept like a yes (authsvc's negative TTL).
  memo_.Put("h4", AuthVerdict{AuthVerdict::Kind::kInvalid, "", "", 0}, absl::Seconds(5),
            memo_.Epoch(), t0_);
  EXPECT_EQ(memo_.Find("h4", t0_)->kind, AuthVerdict::Kind::kInvalid);
}

TEST_F(VerdictMemoTest, ARevocationDropsAtOnceAndAVerdictAskedBeforeItIsNotKept) {
  memo_.Put("h1", Ok("alice"), absl::Seconds(5), memo_.Epoch(), t0_);
  memo_.Put("h2", Ok("alice"), absl::Seconds(5), memo_.Epoch(), t0_);
  memo_.Put("h3", Ok("bob"), absl::Seconds(5), memo_.Epoch(), t0_);
  uint64_t asked = memo_.Epoch();  // a verification in flight...
  EXPECT_EQ(memo_.ForgetUser("alice"), 2u);
  EXPECT_FALSE(memo_.Find("h1", t0_).has_value());
  EXPECT_TRUE(memo_.Find("h3", t0_).has_value());
  // ...answered after the revocation: used for its request, not kept.
  memo_.Put("h1", Ok("alice"), absl::Seconds(5), asked, t0_);
  EXPECT_FALSE(memo_.Find("h1", t0_).has_value());
  EXPECT_EQ(memo_.ForgetToken("h3"), 1u);
  EXPECT_FALSE(memo_.Find("h3", t0_).has_value());
}

TEST_F(VerdictMemoTest, WithoutTheRevocationStreamNothingIsKeptPastASecond) {
  memo_.Put("h1", Ok("alice"), absl::Seconds(5), memo_.Epoch(), t0_);
  memo_.Heard(t0_ + absl::Seconds(1));  // a beat, then the stream ends
  memo_.SetWatched(false, t0_ + absl::Seconds(1));
  EXPECT_TRUE(memo_.Find("h1", t0_ + absl::Milliseconds(1900)).has_value());
  EXPECT_FALSE(memo_.Find("h1", t0_ + absl::Seconds(2)).has_value());
  memo_.Put("h2", Ok("alice"), absl::Seconds(5), memo_.Epoch(), t0_ + absl::Seconds(2));
  EXPECT_FALSE(memo_.Find("h2", t0_ + absl::Seconds(3)).has_value());
}

TEST_F(VerdictMemoTest, AStreamSilentForOverASecondIsTakenForDown) {
  memo_.Put("h1", Ok("alice"), absl::Seconds(5), memo_.Epoch(), t0_);
  memo_.Heard(t0_ + absl::Milliseconds(500));
  EXPECT_TRUE(memo_.Find("h1", t0_ + absl::Milliseconds(1400)).has_value());
  // Nothing since 0.5 s: authsvc may have revoked it unheard.
  EXPECT_FALSE(memo_.Find("h1", t0_ + absl::Milliseconds(1500)).has_value());
  // A beat again: every revocation before it has been heard, and there was none.
  memo_.Heard(t0_ + absl::Seconds(2));
  EXPECT_TRUE(memo_.Find("h1", t0_ + absl::Milliseconds(2500)).has_value());
  // A verdict asked while the stream is silent is authsvc's word as of then: a second.
  memo_.Put("h2", Ok("bob"), absl::Seconds(5), memo_.Epoch(), t0_ + absl::Seconds(4));
  EXPECT_TRUE(memo_.Find("h2", t0_ + absl::Milliseconds(4900)).has_value());
  EXPECT_FALSE(memo_.Find("h2", t0_ + absl::Seconds(5)).has_value());
}

TEST(VerdictMemoCapacityTest, StaysWithinItsCapacity) {
  VerdictMemo memo(VerdictMemoOptions{3, absl::Seconds(1)});
  absl::Time t0 = absl::FromUnixSeconds(1000000);
  memo.SetWatched(true, t0);
  for (int i = 0; i < 10; ++i) {
    memo.Put("h" + std::to_string(i), Ok("u"), absl::Seconds(5), memo.Epoch(), t0);
  }
  EXPECT_EQ(memo.size(), 3u);
  EXPECT_TRUE(memo.Find("h9", t0).has_value());
}

}  // namespace
}  // namespace relay::gateway
