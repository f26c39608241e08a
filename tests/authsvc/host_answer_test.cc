#include "authsvc/host_answer.h"

#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace relay::authsvc {
namespace {

using ::relay::testing::StatusIs;

TEST(InterpretHostReply, OkCarriesUserAndRole) {
  auto a = InterpretHostReply({200, R"({"user":"alice","role":"admin"})", ""});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->kind, HostAnswer::Kind::kOk);
  EXPECT_EQ(a->user, "alice");
  EXPECT_EQ(a->role, "admin");
  EXPECT_EQ(a->resource, "");  // a token that names no resource
}

TEST(InterpretHostReply, OkCarriesTheResourceTheTokenWasIssuedFor) {
  auto a = InterpretHostReply(
      {200, R"({"user":"alice","role":"user","resource":"https://relay.example/mcp"})", ""});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->resource, "https://relay.example/mcp");
  // Not a string: as if not said (the gateway then accepts it as a dialog token).
  EXPECT_EQ(InterpretHostReply({200, R"({"user":"alice","resource":7})", ""})->resource, "");
}

TEST(InterpretHostReply, RefusalsAreAnswers) {
  EXPECT_EQ(InterpretHostReply({401, "{}", ""})->kind, HostAnswer::Kind::kInvalid);
  auto locked = InterpretHostReply({429, "{}", "900"});
  EXPECT_EQ(locked->kind, HostAnswer::Kind::kLockedOut);
  EXPECT_EQ(locked->retry_after_seconds, 900u);
}

TEST(InterpretHostReply, FailuresAreUnavailableNeverInvalid) {
  for (int status : {404, 500, 502, 503, 302}) {
    EXPECT_THAT(InterpretHostReply({status, "", ""}), StatusIs(absl::StatusCode::kUnavailable));
  }
  EXPECT_THAT(InterpretHostReply({200, "not json", ""}), StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(InterpretHostReply({200, R"({"user":""})", ""}),
              StatusIs(absl::StatusCode::kUnavailable));
}

}  // namespace
}  // namespace relay::authsvc
