#include "gateway/core/signed_out_users.h"

#include "gtest/gtest.h"

namespace relay::gateway {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

TEST(SignedOutUsers, ACredentialSignedBeforeTheSignOutIsNoLongerGood) {
  SignedOutUsers users(absl::Minutes(5), 100);
  users.Add("alice", kT0);
  EXPECT_TRUE(users.EndedSince("alice", kT0 - absl::Seconds(1)));
  EXPECT_TRUE(users.EndedSince("alice", kT0));
  // Signed after the sign-out (the tab came back with a new ticket since): good.
  EXPECT_FALSE(users.EndedSince("alice", kT0 + absl::Seconds(1)));
  EXPECT_FALSE(users.EndedSince("bob", kT0 - absl::Seconds(1)));
}

TEST(SignedOutUsers, FullItForgetsWhatNoCredentialOutlivesThenRefusesBelowAFloor) {
  SignedOutUsers users(absl::Minutes(5), 2);
  users.Add("old", kT0);
  users.Add("bob", kT0 + absl::Minutes(6));
  users.Add("carol", kT0 + absl::Minutes(7));  // "old" is past the horizon: dropped
  EXPECT_EQ(users.size(), 2u);
  EXPECT_FALSE(users.EndedSince("dave", kT0 + absl::Minutes(1)));
  users.Add("erin", kT0 + absl::Minutes(8));  // bob is still needed: dropped, under the floor
  EXPECT_EQ(users.size(), 2u);
  EXPECT_TRUE(users.EndedSince("bob", kT0 + absl::Minutes(6)));
  EXPECT_TRUE(users.EndedSince("anyone", kT0 + absl::Minutes(6)));
  EXPECT_FALSE(users.EndedSince("anyone", kT0 + absl::Minutes(6) + absl::Seconds(1)));
  EXPECT_TRUE(users.EndedSince("erin", kT0 + absl::Minutes(8)));
}

}  // namespace
}  // namespace relay::gateway
