#include "router/core/kept_answers.h"

#include "gtest/gtest.h"

namespace relay::router {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1'000'000);

KeptAnswers::Answer AnswerOf(const std::string& account, size_t bytes,
                             absl::Duration ttl = absl::Seconds(30)) {
  KeptAnswers::Answer answer;
  answer.account = account;
  answer.payload = std::string(bytes, 'x');
  answer.until = kNow + ttl;
  return answer;
}

TEST(KeptAnswersTest, TakenOnceByItsOwnAccount) {
  KeptAnswers kept(10, 1 << 20);
  kept.Keep(1, AnswerOf("alice", 3));
  EXPECT_FALSE(kept.Take(1, "mallory", kNow).has_value());
  ASSERT_TRUE(kept.Take(1, "alice", kNow).has_value());
  EXPECT_FALSE(kept.Take(1, "alice", kNow).has_value());
  EXPECT_EQ(kept.bytes(), 0u);
}

TEST(KeptAnswersTest, ExpiredAnswersAreGone) {
  KeptAnswers kept(10, 1 << 20);
  kept.Keep(1, AnswerOf("alice", 3, absl::Seconds(1)));
  EXPECT_FALSE(kept.Take(1, "alice", kNow + absl::Seconds(2)).has_value());
  kept.Expire(kNow + absl::Seconds(2));
  EXPECT_EQ(kept.size(), 0u);
  EXPECT_EQ(kept.bytes(), 0u);
}

TEST(KeptAnswersTest, BoundedByCountAndBytesOldestFirst) {
  KeptAnswers kept(2, 100);
  kept.Keep(1, AnswerOf("a", 10));
  kept.Keep(2, AnswerOf("a", 10));
  kept.Keep(3, AnswerOf("a", 10));
  EXPECT_EQ(kept.size(), 2u);
  EXPECT_FALSE(kept.Take(1, "a", kNow).has_value());
  kept.Keep(4, AnswerOf("a", 95));
  EXPECT_LE(kept.bytes(), 100u);
  EXPECT_TRUE(kept.Take(4, "a", kNow).has_value());
  kept.Keep(5, AnswerOf("a", 101));  // larger than everything: not kept
  EXPECT_FALSE(kept.Take(5, "a", kNow).has_value());
}

TEST(KeptAnswersTest, TakenAnswersBehindALongLivedOneDoNotPileUp) {
  KeptAnswers kept(1000, 1 << 20);
  kept.Keep(1, AnswerOf("a", 1, absl::Hours(1)));
  for (uint64_t id = 2; id < 500; ++id) {
    kept.Keep(id, AnswerOf("a", 1));
    ASSERT_TRUE(kept.Take(id, "a", kNow).has_value());
  }
  EXPECT_EQ(kept.size(), 1u);
  EXPECT_LE(kept.queued_ids(), 2 * kept.size() + 17);
}

}  // namespace
}  // namespace relay::router
