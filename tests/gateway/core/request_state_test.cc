#include "gateway/core/request_state.h"

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace relay::gateway {
namespace {

using ::relay::testing::StatusIs;

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

RequestState Sample() {
  RequestState state;
  state.account = "alice";
  state.call_id = 42;
  state.round = 2;
  state.keys = {"r1", "r2"};
  state.expires = kNow + absl::Seconds(30);
  return state;
}

TEST(RequestStateSigner, SignedStateVerifiesOnAnotherGatewayWithTheSecret) {
  std::string text = RequestStateSigner("shared").Sign(Sample());
  auto state = RequestStateSigner("shared").Verify(text, kNow);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->account, "alice");
  EXPECT_EQ(state->call_id, 42u);
  EXPECT_EQ(state->round, 2u);
  EXPECT_EQ(state->keys, (std::vector<std::string>{"r1", "r2"}));
  EXPECT_EQ(state->expires, kNow + absl::Seconds(30));
}

TEST(RequestStateSigner, ExpiredStateIsRefused) {
  RequestStateSigner signer("s");
  std::string text = signer.Sign(Sample());
  EXPECT_THAT(signer.Verify(text, kNow + absl::Seconds(30)),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
}

TEST(RequestStateSigner, OtherSecretIsRefused) {
  std::string text = RequestStateSigner("one").Sign(Sample());
  EXPECT_THAT(RequestStateSigner("two").Verify(text, kNow),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(RequestStateSigner, ChangedPayloadIsRefused) {
  RequestStateSigner signer("s");
  std::string text = signer.Sign(Sample());
  // Another account's name in the payload, the MAC kept.
  RequestState other = Sample();
  other.account = "mallory";
  std::string forged = signer.Sign(other);
  std::string spliced = forged.substr(0, forged.rfind('.')) + text.substr(text.rfind('.'));
  EXPECT_THAT(signer.Verify(spliced, kNow), StatusIs(absl::StatusCode::kInvalidArgument));
  // One character flipped anywhere.
  for (size_t i = 4; i < text.size(); i += 7) {
    std::string flipped = text;
    flipped[i] = flipped[i] == 'A' ? 'B' : 'A';
    EXPECT_FALSE(signer.Verify(flipped, kNow).ok()) << i;
  }
}

TEST(RequestStateSigner, GarbageIsRefused) {
  RequestStateSigner signer("s");
  for (const char* text : {"", "rs1.", "rs1..", "rs1.e30.", "v1.a.b.c", "rs1.%%%.x"}) {
    EXPECT_THAT(signer.Verify(text, kNow), StatusIs(absl::StatusCode::kInvalidArgument)) << text;
  }
  EXPECT_FALSE(signer.Verify(std::string(9000, 'a'), kNow).ok());
}

}  // namespace
}  // namespace relay::gateway
