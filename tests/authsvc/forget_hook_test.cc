#include "authsvc/forget_hook.h"

#include "gtest/gtest.h"

namespace relay::authsvc {
namespace {

class ForgetHookTest : public ::testing::Test {
 protected:
  std::optional<common::OperatorReply> Ask(const std::string& body, const std::string& key = "k3y",
                                           const std::string& method = "POST",
                                           const std::string& target = "/forget") {
    common::OperatorRequest request{method, target, key, body};
    return AnswerForgetHook(request, "k3y", [this](const relay::v1::ForgetRequest& what) {
      asked.push_back(what);
      return size_t{2};
    });
  }
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
  EXPECT_TRUE(asked.empty());
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
