#include "gateway/core/modern_request.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace relay::gateway {
namespace {

RpcMessage Request(const std::string& method, nlohmann::json params) {
  RpcMessage message;
  message.kind = RpcMessage::Kind::kRequest;
  message.id = 1;
  message.method = method;
  // As DecodeMessage gives them: the text, or absent.
  message.params = params.is_null() ? LazyJson() : LazyJson::FromText(params.dump());
  return message;
}

nlohmann::json Meta(nlohmann::json capabilities = nlohmann::json::object()) {
  return {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
          {"io.modelcontextprotocol/clientInfo", {{"name", "t"}, {"version", "1"}}},
          {"io.modelcontextprotocol/clientCapabilities", std::move(capabilities)}};
}

ModernHeaders Headers(const std::string& method, std::optional<std::string> name = {}) {
  return ModernHeaders{"2026-07-28", method, std::move(name)};
}

int CodeOf(const std::variant<ModernRequest, ModernRefusal>& checked) {
  const auto* refusal = std::get_if<ModernRefusal>(&checked);
  return refusal == nullptr ? 0 : refusal->code;
}

TEST(IsModern, TellsTheErasApart) {
  EXPECT_TRUE(IsModern("2026-07-28", Request("tools/list", nullptr)));
  EXPECT_TRUE(IsModern(std::nullopt, Request("tools/list", {{"_meta", Meta()}})));
  EXPECT_TRUE(IsModern(std::nullopt, Request("server/discover", nullptr)));
  EXPECT_TRUE(IsModern("2025-11-25", Request("subscriptions/listen", nullptr)));
  // initialize with the modern envelope is a modern request (answered 404).
  EXPECT_TRUE(IsModern("2026-07-28", Request("initialize", {{"_meta", Meta()}})));
  EXPECT_FALSE(IsModern("2025-11-25", Request("initialize", {{"protocolVersion", "2025-11-25"}})));
  EXPECT_FALSE(IsModern(std::nullopt, Request("tools/call", {{"_meta", {{"progressToken", 1}}}})));
  EXPECT_FALSE(IsModern("1999-01-01", Request("tools/list", nullptr)));
}

TEST(CheckModern, AcceptsAWellFormedRequestAndReadsItsOptions) {
  nlohmann::json meta = Meta({{"elicitation", nlohmann::json::object()}, {"roots", {{"listChanged", true}}}});
  meta["io.modelcontextprotocol/logLevel"] = "warning";
  auto checked = CheckModern(Headers("tools/call", "echo"),
                             Request("tools/call", {{"name", "echo"}, {"_meta", meta}}));
  ASSERT_EQ(CodeOf(checked), 0);
  const auto& request = std::get<ModernRequest>(checked);
  EXPECT_EQ(request.version, "2026-07-28");
  EXPECT_TRUE(request.capabilities.elicitation);
  EXPECT_TRUE(request.capabilities.roots);
  EXPECT_FALSE(request.capabilities.sampling);
  EXPECT_EQ(request.log_rank, 3);
}

TEST(CheckModern, ACapabilityThatIsNullOrFalseIsNotDeclared) {
  nlohmann::json meta = Meta({{"elicitation", nullptr}, {"sampling", false}, {"roots", 0}});
  auto checked = CheckModern(Headers("tools/list"), Request("tools/list", {{"_meta", meta}}));
  ASSERT_EQ(CodeOf(checked), 0);
  const auto& request = std::get<ModernRequest>(checked);
  EXPECT_FALSE(request.capabilities.elicitation);
  EXPECT_FALSE(request.capabilities.sampling);
  EXPECT_TRUE(request.capabilities.roots);
  // The last of duplicate keys wins, and keys are read unescaped, as a parser reads them.
  RpcMessage message = Request("tools/list", nullptr);
  message.params = LazyJson::FromText(absl::StrCat(
      R"({"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25",)",
      R"("io.modelcontextprotocol/protocolVersio\u006e":"2026-07-28",)",
      R"("io.modelcontextprotocol/clientCapabilities":{"sampling":{},"sampling":false}}})"));
  auto again = CheckModern(Headers("tools/list"), message);
  ASSERT_EQ(CodeOf(again), 0);
  EXPECT_FALSE(std::get<ModernRequest>(again).capabilities.sampling);
}

TEST(CheckModern, ClientInfoIsOptional) {
  nlohmann::json meta = Meta();
  meta.erase("io.modelcontextprotocol/clientInfo");
  EXPECT_EQ(CodeOf(CheckModern(Headers("server/discover"),
                               Request("server/discover", {{"_meta", meta}}))),
            0);
}

TEST(CheckModern, MissingEnvelopeIsInvalidParams) {
  EXPECT_EQ(CodeOf(CheckModern(Headers("server/discover"), Request("server/discover", nullptr))),
            kInvalidParams);
  for (const char* key :
       {"io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientCapabilities"}) {
    nlohmann::json meta = Meta();
    meta.erase(key);
    auto checked = CheckModern(Headers("tools/list"), Request("tools/list", {{"_meta", meta}}));
    EXPECT_EQ(CodeOf(checked), kInvalidParams) << key;
    EXPECT_EQ(std::get<ModernRefusal>(checked).status, 400);
  }
}

TEST(CheckModern, HeadersMustMirrorTheBody) {
  auto body = Request("tools/call", {{"name", "echo"}, {"_meta", Meta()}});
  EXPECT_EQ(CodeOf(CheckModern(ModernHeaders{std::nullopt, "tools/call", "echo"}, body)),
            kHeaderMismatch);
  EXPECT_EQ(CodeOf(CheckModern(ModernHeaders{"2025-11-25", "tools/call", "echo"}, body)),
            kHeaderMismatch);
  EXPECT_EQ(CodeOf(CheckModern(Headers("tools/list", "echo"), body)), kHeaderMismatch);
  EXPECT_EQ(CodeOf(CheckModern(ModernHeaders{"2026-07-28", std::nullopt, "echo"}, body)),
            kHeaderMismatch);
  EXPECT_EQ(CodeOf(CheckModern(Headers("tools/call"), body)), kHeaderMismatch);
  EXPECT_EQ(CodeOf(CheckModern(Headers("tools/call", "other"), body)), kHeaderMismatch);
  // The base64 sentinel carries names that are not plain ASCII.
  EXPECT_EQ(CodeOf(CheckModern(Headers("tools/call", "=?base64?ZWNobw==?="), body)), 0);
  auto read = Request("resources/read", {{"uri", "test://x"}, {"_meta", Meta()}});
  EXPECT_EQ(CodeOf(CheckModern(Headers("resources/read", "test://x"), read)), 0);
  EXPECT_EQ(CodeOf(CheckModern(Headers("resources/read", "test://y"), read)), kHeaderMismatch);
}

TEST(CheckModern, UnsupportedVersionListsTheSupportedOnes) {
  nlohmann::json meta = Meta();
  meta["io.modelcontextprotocol/protocolVersion"] = "v999.0.0";
  auto checked = CheckModern(ModernHeaders{"v999.0.0", "server/discover", std::nullopt},
                             Request("server/discover", {{"_meta", meta}}));
  ASSERT_EQ(CodeOf(checked), kUnsupportedVersion);
  const auto& refusal = std::get<ModernRefusal>(checked);
  EXPECT_EQ(refusal.data["requested"], "v999.0.0");
  EXPECT_EQ(refusal.data["supported"][0], "2026-07-28");
  // The header naming another version than _meta is a mismatch first.
  EXPECT_EQ(CodeOf(CheckModern(Headers("server/discover"),
                               Request("server/discover", {{"_meta", meta}}))),
            kHeaderMismatch);
}

TEST(CheckModern, UnknownLogLevelIsInvalidParams) {
  nlohmann::json meta = Meta();
  meta["io.modelcontextprotocol/logLevel"] = "loud";
  EXPECT_EQ(CodeOf(CheckModern(Headers("tools/list"), Request("tools/list", {{"_meta", meta}}))),
            kInvalidParams);
}

TEST(CompleteResult, AddsResultTypeOnceAndExtraMembers) {
  EXPECT_EQ(CompleteResult("{}"), R"({"resultType":"complete"})");
  EXPECT_EQ(CompleteResult(R"( {"a":1} )", R"("ttlMs":0)"),
            R"({"a":1,"resultType":"complete","ttlMs":0})");
  EXPECT_EQ(CompleteResult(R"({"resultType":"complete","a":1})"),
            R"({"resultType":"complete","a":1})");
  // A string that merely contains the word is not the member.
  EXPECT_EQ(CompleteResult(R"({"text":"\"resultType\""})"),
            R"({"text":"\"resultType\"","resultType":"complete"})");
  // A tab's own bytes may spell the key with an escape, or nest it: only the
  // top-level member counts, however spelt.
  EXPECT_EQ(CompleteResult(R"({"result\u0054ype":"complete"})"),
            R"({"result\u0054ype":"complete"})");
  EXPECT_EQ(CompleteResult(R"({"a":{"resultType":1}})"),
            R"({"a":{"resultType":1},"resultType":"complete"})");
  EXPECT_EQ(CompleteResult("[1]"), "[1]");
  for (const std::string& text : {CompleteResult(R"({"a":{"b":[1,2]}})", R"("x":1)")}) {
    EXPECT_TRUE(nlohmann::json::accept(text)) << text;
  }
}

}  // namespace
}  // namespace relay::gateway
