#include "gateway/core/session_id.h"

#include <new>
#include <string>

#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace relay::gateway {
namespace {

using ::relay::testing::StatusIs;

TEST(SessionIdSigner, IssuedIdVerifiesToItsAccount) {
  SessionIdSigner signer("secret-1");
  std::string id = signer.Issue("alice@example.org");
  auto account = signer.Verify(id);
  ASSERT_TRUE(account.ok());
  EXPECT_EQ(*account, "alice@example.org");
}

TEST(SessionIdSigner, IdsAreVisibleAsciiAndUnique) {
  SessionIdSigner signer("secret-1");
  std::string a = signer.Issue("bob");
  EXPECT_NE(a, signer.Issue("bob"));
  for (char c : a) {
    EXPECT_TRUE(c >= 0x21 && c <= 0x7e) << a;
  }
}

TEST(SessionIdSigner, AnotherGatewayWithTheSameSecretAccepts) {
  std::string id = SessionIdSigner("shared").Issue("carol");
  EXPECT_EQ(*SessionIdSigner("shared").Verify(id), "carol");
}

TEST(SessionIdSigner, OtherSecretIsRefused) {
  std::string id = SessionIdSigner("one").Issue("carol");
  EXPECT_THAT(SessionIdSigner("two").Verify(id), StatusIs(absl::StatusCode::kNotFound));
}

TEST(SessionIdSigner, TruncatedIdsAreRefused) {
  SessionIdSigner signer("secret");
  std::string id = signer.Issue("dave");
  for (size_t n = 0; n < id.size(); ++n) {
    EXPECT_FALSE(signer.Verify(id.substr(0, n)).ok()) << n;
  }
}

TEST(SessionIdSigner, ForgedAccountIsRefused) {
  SessionIdSigner signer("secret");
  std::string id = signer.Issue("mallory");
  // Swap the account part for another account's, keeping the MAC.
  std::string other = signer.Issue("alice");
  size_t a1 = id.find('.') + 1, a2 = id.find('.', a1);
  size_t b1 = other.find('.') + 1, b2 = other.find('.', b1);
  std::string forged = id.substr(0, a1) + other.substr(b1, b2 - b1) + id.substr(a2);
  EXPECT_THAT(signer.Verify(forged), StatusIs(absl::StatusCode::kNotFound));
}

TEST(SessionIdSigner, FlippedCharacterIsRefused) {
  SessionIdSigner signer("secret");
  std::string id = signer.Issue("erin");
  for (size_t i = 0; i < id.size(); ++i) {
    std::string bad = id;
    bad[i] = bad[i] == 'A' ? 'B' : 'A';
    if (bad != id) {
      EXPECT_FALSE(signer.Verify(bad).ok()) << i;
    }
  }
}

TEST(SessionIdSigner, AnIdVerifiedBeforeVerifiesAgainAndNothingElseRidesOnIt) {
  SessionIdSigner signer("secret");
  std::string id = signer.Issue("frank");
  ASSERT_EQ(*signer.Verify(id), "frank");
  EXPECT_EQ(*signer.Verify(id), "frank");  // remembered
  // The same length, one character off: still checked.
  std::string bad = id;
  bad.back() = bad.back() == 'A' ? 'B' : 'A';
  EXPECT_THAT(signer.Verify(bad), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(signer.Verify(id.substr(0, id.size() - 1)), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(*signer.Verify(id), "frank");
}

TEST(SessionIdSigner, AnIdOneSignerVerifiedIsNotTakenByASignerWithAnotherSecret) {
  SessionIdSigner one("one");
  SessionIdSigner two("two");
  std::string id = one.Issue("grace");
  ASSERT_EQ(*one.Verify(id), "grace");
  EXPECT_THAT(two.Verify(id), StatusIs(absl::StatusCode::kNotFound));
  // Nor a signer with another secret made where the first one was.
  alignas(SessionIdSigner) unsigned char storage[sizeof(SessionIdSigner)];
  auto* first = new (storage) SessionIdSigner("first");
  std::string theirs = first->Issue("heidi");
  ASSERT_TRUE(first->Verify(theirs).ok());
  first->~SessionIdSigner();
  auto* other = new (storage) SessionIdSigner("other");
  EXPECT_THAT(other->Verify(theirs), StatusIs(absl::StatusCode::kNotFound));
  other->~SessionIdSigner();
}

TEST(SessionIdSigner, GarbageIsRefused) {
  SessionIdSigner signer("secret");
  for (const char* junk : {"", ".", "v1", "v1...", "v2.a.b.c", "x.y.z.w", "v1.a.b.c.d"}) {
    EXPECT_FALSE(signer.Verify(junk).ok()) << junk;
  }
  EXPECT_FALSE(signer.Verify(std::string(5000, 'v')).ok());
}

}  // namespace
}  // namespace relay::gateway
