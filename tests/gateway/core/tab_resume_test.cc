#include "gateway/core/tab_resume.h"

#include "gateway/core/request_state.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace relay::gateway {
namespace {

using ::relay::testing::StatusIs;

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

TabResume Sample() {
  TabResume resume;
  resume.account = "alice";
  resume.role = "user";
  resume.generation = 1'800'000'000'123'456;
  resume.signed_in = kNow - absl::Hours(1);
  resume.expires = kNow + TabResumeSigner::kLifetime;
  return resume;
}

TEST(TabResumeSigner, ACredentialOneGatewaySignedVerifiesOnAnotherWithTheSecret) {
  std::string text = TabResumeSigner("shared").Sign(Sample());
  EXPECT_EQ(text.rfind("tr1.", 0), 0u);
  auto resume = TabResumeSigner("shared").Verify(text, kNow);
  ASSERT_TRUE(resume.ok()) << resume.status();
  EXPECT_EQ(resume->account, "alice");
  EXPECT_EQ(resume->role, "user");
  EXPECT_EQ(resume->generation, 1'800'000'000'123'456u);
  EXPECT_EQ(resume->signed_in, kNow - absl::Hours(1));
  EXPECT_EQ(resume->expires, kNow + TabResumeSigner::kLifetime);
}

TEST(TabResumeSigner, AnExpiredCredentialIsRefused) {
  TabResumeSigner signer("s");
  std::string text = signer.Sign(Sample());
  EXPECT_TRUE(signer.Verify(text, kNow + TabResumeSigner::kLifetime - absl::Milliseconds(1)).ok());
  EXPECT_THAT(signer.Verify(text, kNow + TabResumeSigner::kLifetime),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
}

TEST(TabResumeSigner, AChainOfCredentialsEndsHalfADayAfterItsTicket) {
  TabResumeSigner signer("s");
  TabResume resume = Sample();
  resume.signed_in = kNow - TabResumeSigner::kChainLifetime + absl::Seconds(1);
  EXPECT_TRUE(signer.Verify(signer.Sign(resume), kNow).ok());
  resume.signed_in = kNow - TabResumeSigner::kChainLifetime;
  EXPECT_THAT(signer.Verify(signer.Sign(resume), kNow),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
}

TEST(TabResumeSigner, AnotherSecretOrAChangedPayloadIsRefused) {
  TabResumeSigner signer("s");
  std::string text = signer.Sign(Sample());
  EXPECT_THAT(TabResumeSigner("other").Verify(text, kNow),
              StatusIs(absl::StatusCode::kInvalidArgument));
  // Another account (or a later place in the order) in the payload, the MAC kept.
  TabResume other = Sample();
  other.account = "mallory";
  other.generation += 1;
  std::string forged = signer.Sign(other);
  std::string spliced = forged.substr(0, forged.rfind('.')) + text.substr(text.rfind('.'));
  EXPECT_THAT(signer.Verify(spliced, kNow), StatusIs(absl::StatusCode::kInvalidArgument));
  for (size_t i = 4; i < text.size(); i += 5) {
    std::string flipped = text;
    flipped[i] = flipped[i] == 'A' ? 'B' : 'A';
    EXPECT_FALSE(signer.Verify(flipped, kNow).ok()) << i;
  }
}

TEST(TabResumeSigner, ARequestStateUnderTheSameSecretIsNotACredential) {
  RequestState state;
  state.account = "alice";
  state.expires = kNow + absl::Minutes(1);
  std::string text = RequestStateSigner("s").Sign(state);
  EXPECT_THAT(TabResumeSigner("s").Verify(text, kNow),
              StatusIs(absl::StatusCode::kInvalidArgument));
  // Even with its prefix changed: the keys differ.
  std::string renamed = "tr1." + text.substr(4);
  EXPECT_THAT(TabResumeSigner("s").Verify(renamed, kNow),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(TabResumeSigner, GarbageIsRefused) {
  TabResumeSigner signer("s");
  for (const char* text : {"", "tr1.", "tr1..", "tr1.e30.", "rs1.a.b", "tr1.%%%.x"}) {
    EXPECT_THAT(signer.Verify(text, kNow), StatusIs(absl::StatusCode::kInvalidArgument)) << text;
  }
  EXPECT_FALSE(signer.Verify(std::string(3000, 'a'), kNow).ok());
}

}  // namespace
}  // namespace relay::gateway
