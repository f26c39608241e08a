#include "gateway/core/signed_out_users.h"

#include <string>

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

TEST(SignedOutUsers, AtTheCapItMakesATenthOfTheRoomAtOnce) {
  SignedOutUsers users(absl::Hours(12), 100);
  for (int i = 0; i < 101; ++i) {
    users.Add("user" + std::to_string(i), kT0 + absl::Seconds(i));
  }
  // The 11 oldest went at once: the next ten sign-outs need no scan.
  EXPECT_EQ(users.size(), 90u);
  EXPECT_TRUE(users.EndedSince("user10", kT0 + absl::Seconds(10)));
  EXPECT_TRUE(users.EndedSince("anyone", kT0 + absl::Seconds(10)));
  EXPECT_FALSE(users.EndedSince("anyone", kT0 + absl::Seconds(11)));
  EXPECT_TRUE(users.EndedSince("user11", kT0 + absl::Seconds(11)));
  for (int i = 101; i < 111; ++i) {
    users.Add("user" + std::to_string(i), kT0 + absl::Seconds(i));
  }
  EXPECT_EQ(users.size(), 100u);
}

}  // namespace
}  // namespace relay::gateway
