#include "authsvc/forget_hook.h"

#include "gtest/gtest.h"

namespace relay::authsvc {
namespace {

class ForgetHookTest : public ::testing::Test {
 protected:
  // Signed with key at signed_at (now by default), asked at now.
  std::optional<common::OperatorReply> Ask(const std::string& body, const std::string& key = "k3y",
                                           const std::string& method = "POST",
                                           const std::string& target = "/forget",
                                           absl::Duration signed_ago = absl::ZeroDuration()) {
    common::OperatorRequest request{method, target, SignForget(key, body, now - signed_ago), body};
    return AnswerForgetHook(
        request, "k3y",
        [this](const relay::v1::ForgetRequest& what) {
          asked.push_back(what);
          return size_t{2};
        },
        now);
  }
  const absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  std::vector<relay::v1::ForgetRequest> asked;
};

TEST_F(ForgetHookTest, AUserOrATokenHashIsForgotten) {
  auto user = Ask(R"({"user":"alice"})");
  ASSERT_TRUE(user.has_value());
  EXPECT_EQ(user->status, 200);
  EXPECT_EQ(user->body, R"({"dropped":2})");
  std::string hash(64, 'a');
  EXPECT_EQ(Ask(R"({"tokenSha256":")" + hash + R"("})")->status, 200);
  ASSERT_EQ(asked.size(), 2u);
  EXPECT_EQ(asked[0].user(), "alice");
  EXPECT_EQ(asked[1].token_sha256(), hash);
}

TEST_F(ForgetHookTest, WithoutTheRelayKeyNothingIsForgotten) {
  EXPECT_EQ(Ask(R"({"user":"alice"})", "wrong")->status, 401);
  EXPECT_EQ(Ask(R"({"user":"alice"})", "")->status, 401);
  common::OperatorRequest unsigned_request{"POST", "/forget", "", R"({"user":"alice"})"};
  EXPECT_EQ(AnswerForgetHook(unsigned_request, "k3y",
                             [](const relay::v1::ForgetRequest&) { return size_t{1}; }, now)
                ->status,
            401);
  // The key itself, as the hook used to send it, proves nothing now.
  common::OperatorRequest key_as_signature{"POST", "/forget", "k3y", R"({"user":"alice"})"};
  EXPECT_EQ(AnswerForgetHook(key_as_signature, "k3y",
                             [](const relay::v1::ForgetRequest&) { return size_t{1}; }, now)
                ->status,
            401);
  EXPECT_TRUE(asked.empty());
}

// Issue 25.7: the hook may be plain http inside a deployment; what it sends
// must not open the host API's relay routes to whoever sees it. The key never
// travels, a signature is good for its body only and for minutes.
TEST_F(ForgetHookTest, ASignatureIsForItsBodyAndForMinutesOnly) {
  common::OperatorRequest moved{"POST", "/forget", SignForget("k3y", R"({"user":"alice"})", now),
                                R"({"user":"mallory"})"};
  EXPECT_EQ(AnswerForgetHook(moved, "k3y",
                             [](const relay::v1::ForgetRequest&) { return size_t{1}; }, now)
                ->status,
            401);
  EXPECT_EQ(Ask(R"({"user":"alice"})", "k3y", "POST", "/forget", absl::Minutes(6))->status, 401);
  EXPECT_EQ(Ask(R"({"user":"alice"})", "k3y", "POST", "/forget", absl::Minutes(4))->status, 200);
  EXPECT_EQ(asked.size(), 1u);
}

TEST_F(ForgetHookTest, BadRequestsAreRefusedWithWhatToSend) {
  EXPECT_EQ(Ask(R"({"user":"alice"})", "k3y", "GET")->status, 405);
  for (const char* body : {"", "[]", "{}", R"({"user":""})", R"({"user":1})",
                           R"({"tokenSha256":"ABC"})", R"({"user":"a","tokenSha256":"b"})",
                           "{\"user\":\"a\""}) {
    auto reply = Ask(body);
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(reply->status, 400) << body;
  }
  EXPECT_TRUE(asked.empty());
  EXPECT_FALSE(Ask(R"({"user":"alice"})", "k3y", "POST", "/other").has_value());
}

}  // namespace
}  // namespace relay::authsvc
