#include "authsvc/verify_cache.h"

#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace relay::authsvc {
namespace {

using ::relay::testing::StatusIs;

// An upstream whose answers the test releases by hand.
class FakeUpstream {
 public:
  VerifyCache::Fetch Fetcher() {
    return [this](VerifyCache::Done done) {
      ++requests;
      pending.push_back(std::move(done));
    };
  }
  void Answer(const VerifyCache::Result& result) {
    auto done = std::move(pending.front());
    pending.erase(pending.begin());
    done(result);
  }
  int requests = 0;
  std::vector<VerifyCache::Done> pending;
};

HostAnswer Ok(const std::string& user) {
  HostAnswer a;
  a.kind = HostAnswer::Kind::kOk;
  a.user = user;
  return a;
}

HostAnswer Invalid() { return HostAnswer{}; }

HostAnswer LockedOut() {
  HostAnswer a;
  a.kind = HostAnswer::Kind::kLockedOut;
  a.retry_after_seconds = 900;
  return a;
}

class VerifyCacheTest : public ::testing::Test {
 protected:
  VerifyCache Make(VerifyCacheOptions options = {}) {
    return VerifyCache(options, [this] { return now_; });
  }
  // Verifies and returns the result, if it came synchronously.
  std::optional<VerifyCache::Result> Verify(VerifyCache& cache, const std::string& key) {
    std::optional<VerifyCache::Result> out;
    cache.Verify(key, "", upstream_.Fetcher(), [&out](const VerifyCache::Result& r) { out = r; });
    return out;
  }

  absl::Time now_ = absl::FromUnixSeconds(1000);
  FakeUpstream upstream_;
};

TEST_F(VerifyCacheTest, AYesIsCachedForTheTtl) {
  VerifyCache cache = Make({absl::Seconds(5), absl::Seconds(5), 10});
  EXPECT_FALSE(Verify(cache, "h1").has_value());
  upstream_.Answer(Ok("alice"));
  now_ += absl::Seconds(4);
  auto hit = Verify(cache, "h1");
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ((*hit)->user, "alice");
  EXPECT_EQ(upstream_.requests, 1);
  now_ += absl::Seconds(2);  // 6 s after the answer: expired
  EXPECT_FALSE(Verify(cache, "h1").has_value());
  EXPECT_EQ(upstream_.requests, 2);
}

TEST_F(VerifyCacheTest, ZeroTtlTurnsThePositiveCacheOff) {
  VerifyCache cache = Make({absl::ZeroDuration(), absl::Seconds(5), 10});
  Verify(cache, "h1");
  upstream_.Answer(Ok("alice"));
  EXPECT_FALSE(Verify(cache, "h1").has_value());
  EXPECT_EQ(upstream_.requests, 2);
}

TEST_F(VerifyCacheTest, ANoIsCachedForTheNegativeTtl) {
  VerifyCache cache = Make({absl::Seconds(5), absl::Seconds(2), 10});
  Verify(cache, "bad");
  upstream_.Answer(Invalid());
  now_ += absl::Seconds(1);
  auto hit = Verify(cache, "bad");
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ((*hit)->kind, HostAnswer::Kind::kInvalid);
  now_ += absl::Seconds(2);
  EXPECT_FALSE(Verify(cache, "bad").has_value());
}

TEST_F(VerifyCacheTest, LockOutsAndFailuresAreNeverCached) {
  VerifyCache cache = Make();
  Verify(cache, "h1");
  upstream_.Answer(LockedOut());
  EXPECT_FALSE(Verify(cache, "h1").has_value());
  upstream_.Answer(absl::UnavailableError("down"));
  EXPECT_FALSE(Verify(cache, "h1").has_value());
  EXPECT_EQ(upstream_.requests, 3);
}

TEST_F(VerifyCacheTest, LeastRecentlyUsedIsEvicted) {
  VerifyCache cache = Make({absl::Seconds(60), absl::Seconds(60), 2});
  for (const char* key : {"a", "b"}) {
    Verify(cache, key);
    upstream_.Answer(Ok(key));
  }
  Verify(cache, "a");  // a is now the most recently used
  Verify(cache, "c");
  upstream_.Answer(Ok("c"));
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_TRUE(Verify(cache, "a").has_value());
  EXPECT_FALSE(Verify(cache, "b").has_value());  // evicted
}

TEST_F(VerifyCacheTest, ConcurrentVerificationsShareOneRequest) {
  VerifyCache cache = Make();
  std::vector<VerifyCache::Result> results;
  for (int i = 0; i < 5; ++i) {
    cache.Verify("h1", "", upstream_.Fetcher(),
                 [&results](const VerifyCache::Result& r) { results.push_back(r); });
  }
  EXPECT_EQ(upstream_.requests, 1);
  upstream_.Answer(Ok("alice"));
  ASSERT_EQ(results.size(), 5u);
  for (const auto& r : results) {
    EXPECT_EQ(r->user, "alice");
  }
}

TEST_F(VerifyCacheTest, CoalescedFailureReachesAllWaitersAndTheNextCallRetries) {
  VerifyCache cache = Make();
  std::vector<VerifyCache::Result> results;
  for (int i = 0; i < 3; ++i) {
    cache.Verify("h1", "", upstream_.Fetcher(),
                 [&results](const VerifyCache::Result& r) { results.push_back(r); });
  }
  upstream_.Answer(absl::UnavailableError("host API down"));
  ASSERT_EQ(results.size(), 3u);
  for (const auto& r : results) {
    EXPECT_THAT(r, StatusIs(absl::StatusCode::kUnavailable));
  }
  EXPECT_FALSE(Verify(cache, "h1").has_value());
  EXPECT_EQ(upstream_.requests, 2);
  upstream_.Answer(Ok("alice"));
  EXPECT_TRUE(Verify(cache, "h1").has_value());
}

TEST_F(VerifyCacheTest, ForgetDropsAtOnceByUserOrByHash) {
  VerifyCache cache = Make();
  for (const char* key : {"a1", "a2"}) {
    Verify(cache, key);
    upstream_.Answer(Ok("alice"));
  }
  Verify(cache, "b1");
  upstream_.Answer(Ok("bob"));
  EXPECT_EQ(cache.ForgetUser("alice"), 2u);
  EXPECT_FALSE(Verify(cache, "a1").has_value());
  EXPECT_EQ(cache.ForgetToken("b1"), 1u);
  EXPECT_FALSE(Verify(cache, "b1").has_value());
}

TEST_F(VerifyCacheTest, AnAnswerInFlightDuringForgetIsNotCached) {
  VerifyCache cache = Make();
  Verify(cache, "a1");
  cache.ForgetUser("alice");
  upstream_.Answer(Ok("alice"));
  EXPECT_FALSE(Verify(cache, "a1").has_value());
}

TEST_F(VerifyCacheTest, ACallerAfterAForgetDoesNotJoinARequestFromBeforeIt) {
  VerifyCache cache = Make();
  std::optional<VerifyCache::Result> before, after;
  cache.Verify("a1", "", upstream_.Fetcher(), [&](const VerifyCache::Result& r) { before = r; });
  // The token is revoked while the host still answers for the check made before.
  cache.ForgetToken("a1");
  cache.Verify("a1", "", upstream_.Fetcher(), [&](const VerifyCache::Result& r) { after = r; });
  EXPECT_EQ(upstream_.requests, 2);
  upstream_.Answer(Ok("alice"));  // the check from before the revocation
  ASSERT_TRUE(before.has_value());
  EXPECT_EQ((*before)->kind, HostAnswer::Kind::kOk);
  EXPECT_FALSE(after.has_value());  // still waits for its own answer
  upstream_.Answer(Invalid());
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ((*after)->kind, HostAnswer::Kind::kInvalid);
  // The answer after the revocation is the one kept.
  auto hit = Verify(cache, "a1");
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ((*hit)->kind, HostAnswer::Kind::kInvalid);
}

TEST_F(VerifyCacheTest, OneTokenFromTwoAddressesIsAskedForEach) {
  VerifyCache cache = Make();
  std::optional<VerifyCache::Result> locked, other;
  cache.Verify("a1", "192.0.2.1", upstream_.Fetcher(),
               [&](const VerifyCache::Result& r) { locked = r; });
  cache.Verify("a1", "192.0.2.2", upstream_.Fetcher(),
               [&](const VerifyCache::Result& r) { other = r; });
  EXPECT_EQ(upstream_.requests, 2);
  // The brake answers for the first address only.
  upstream_.Answer(LockedOut());
  ASSERT_TRUE(locked.has_value());
  EXPECT_EQ((*locked)->kind, HostAnswer::Kind::kLockedOut);
  EXPECT_FALSE(other.has_value());
  upstream_.Answer(Ok("alice"));
  ASSERT_TRUE(other.has_value());
  EXPECT_EQ((*other)->kind, HostAnswer::Kind::kOk);
}

TEST_F(VerifyCacheTest, StatsCountHitsNegativeHitsMissesAndCoalescedWaits) {
  VerifyCache cache = Make();
  Verify(cache, "yes");
  Verify(cache, "yes");  // waits for the first one's request
  upstream_.Answer(Ok("alice"));
  Verify(cache, "yes");
  Verify(cache, "no");
  upstream_.Answer(Invalid());
  Verify(cache, "no");
  Verify(cache, "no");
  VerifyCache::Stats stats = cache.stats();
  EXPECT_EQ(stats.entries, 2u);
  EXPECT_EQ(stats.hits, 1u);
  EXPECT_EQ(stats.negative_hits, 2u);
  EXPECT_EQ(stats.misses, 2u);
  EXPECT_EQ(stats.coalesced, 1u);
}

}  // namespace
}  // namespace relay::authsvc
