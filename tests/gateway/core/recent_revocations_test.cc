#include "gateway/core/recent_revocations.h"

#include <string>

#include "gtest/gtest.h"

namespace relay::gateway {
namespace {

TEST(RecentRevocations, AStreamAskedBeforeARevocationOfItsTokenOrUserIsToldSo) {
  RecentRevocations revocations(16);
  const uint64_t before = revocations.Mark();
  revocations.Add("", "aaaa");      // a token of someone's
  revocations.Add("alice", "");     // alice's sign-in ended
  EXPECT_TRUE(revocations.Since(before, "bob", "aaaa"));
  EXPECT_TRUE(revocations.Since(before, "alice", "bbbb"));
  // Another user's, another token: nothing of its own was revoked.
  EXPECT_FALSE(revocations.Since(before, "bob", "bbbb"));
  // An empty name matches no empty field: a token's revocation names no user.
  EXPECT_FALSE(revocations.Since(before, "", "cccc"));
}

TEST(RecentRevocations, WhatWasAskedAfterARevocationIsNotTouchedByIt) {
  RecentRevocations revocations(16);
  revocations.Add("alice", "");
  const uint64_t after = revocations.Mark();
  EXPECT_FALSE(revocations.Since(after, "alice", "aaaa"));
  revocations.Add("", "aaaa");
  EXPECT_TRUE(revocations.Since(after, "alice", "aaaa"));
  EXPECT_FALSE(revocations.Since(after, "alice", "bbbb"));
}

TEST(RecentRevocations, AMarkOlderThanAllItKeepsCountsAsRevoked) {
  RecentRevocations revocations(2);
  const uint64_t before = revocations.Mark();
  revocations.Add("carol", "");
  const uint64_t middle = revocations.Mark();
  revocations.Add("dave", "");
  revocations.Add("erin", "");  // carol's is dropped: what came after `before` is not all known
  EXPECT_TRUE(revocations.Since(before, "bob", "bbbb"));
  // From `middle` on, both are kept: only they count.
  EXPECT_FALSE(revocations.Since(middle, "bob", "bbbb"));
  EXPECT_TRUE(revocations.Since(middle, "erin", ""));
  EXPECT_FALSE(revocations.Since(middle, "carol", ""));
}

}  // namespace
}  // namespace relay::gateway
