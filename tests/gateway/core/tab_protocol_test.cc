#include "gateway/core/tab_protocol.h"

#include <gtest/gtest.h>

namespace relay::gateway {
namespace {

RpcMessage Decoded(const std::string& text) {
  auto decoded = DecodeMessage(text);
  EXPECT_TRUE(std::holds_alternative<RpcMessage>(decoded)) << text;
  return std::get<RpcMessage>(std::move(decoded));
}

TEST(TabNoticeTest, WhatGoesToEveryAgentIsBoundedWhatGoesToOneCallIsNot) {
  const std::string pad(kMaxFanOutParamsBytes, 'x');
  auto big = [&](const std::string& method, const std::string& extra) {
    return ParseTabNotice(Decoded(R"({"jsonrpc":"2.0","method":")" + method +
                                  R"(","params":{)" + extra + R"("pad":")" + pad + R"("}})"));
  };
  // Copied once per agent of the account: dropped past 64 KiB.
  EXPECT_FALSE(big("notifications/tools/list_changed", "").has_value());
  EXPECT_FALSE(big("notifications/resources/updated", R"("uri":"doc://a",)").has_value());
  EXPECT_FALSE(big("notifications/message", R"("level":"info",)").has_value());
  // For one call's agent: passed on whole.
  EXPECT_TRUE(big("notifications/progress", R"("progressToken":"p",)").has_value());
  EXPECT_TRUE(big("notifications/message",
                  R"("level":"info","_meta":{"relay/requestId":7},)").has_value());
  // A view line is kept in every session of the account: cut to 2 KiB.
  auto line = ParseTabNotice(Decoded(
      R"({"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"doc://a","_meta":{"relay/line":")" +
      std::string(10000, 'y') + R"("}}})"));
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(line->line.size(), kMaxViewLineBytes);
}

TEST(TabHelloTest, ARelayHelloWithATicket) {
  auto hello = ParseTabHello(
      R"({"jsonrpc":"2.0","id":"h1","method":"relay/hello","params":{"ticket":"tk","client":{"name":"editor","version":"2.1"}}})",
      100);
  ASSERT_TRUE(hello.has_value());
  EXPECT_EQ(hello->id, "h1");
  EXPECT_EQ(hello->ticket, "tk");
  EXPECT_EQ(hello->client_name, "editor");
  EXPECT_EQ(hello->client_version, "2.1");
}

TEST(TabHelloTest, AHelloMayBringAResumeCredentialInsteadOfATicketAndItWins) {
  auto resumed = ParseTabHello(
      R"({"jsonrpc":"2.0","id":1,"method":"relay/hello","params":{"resume":"tr1.x.y"}})", 100);
  ASSERT_TRUE(resumed.has_value());
  EXPECT_EQ(resumed->resume, "tr1.x.y");
  EXPECT_EQ(resumed->ticket, "");
  auto both = ParseTabHello(
      R"({"jsonrpc":"2.0","id":1,"method":"relay/hello","params":{"ticket":"tk","resume":"tr1.x.y"}})",
      100);
  ASSERT_TRUE(both.has_value());
  EXPECT_EQ(both->resume, "tr1.x.y");
  // A resume that is not a string does not count; the ticket still does.
  auto odd = ParseTabHello(
      R"({"jsonrpc":"2.0","id":1,"method":"relay/hello","params":{"ticket":"tk","resume":7}})", 100);
  ASSERT_TRUE(odd.has_value());
  EXPECT_EQ(odd->ticket, "tk");
  EXPECT_EQ(odd->resume, "");
  EXPECT_FALSE(ParseTabHello(R"({"jsonrpc":"2.0","id":1,"method":"relay/hello","params":{"resume":null}})", 100)
                   .has_value());
}

TEST(TabHelloTest, ClientInfoIsOptionalAndOnlyStringsCount) {
  auto hello = ParseTabHello(
      R"({"jsonrpc":"2.0","id":0,"method":"relay/hello","params":{"ticket":"tk","client":{"name":7}}})",
      100);
  ASSERT_TRUE(hello.has_value());
  EXPECT_EQ(hello->id, 0);
  EXPECT_EQ(hello->client_name, "");
}

TEST(TabHelloTest, AnythingElseIsNotAHello) {
  for (const char* text : {
           R"({"jsonrpc":"2.0","id":1,"method":"relay/hello","params":{}})",
           R"({"jsonrpc":"2.0","id":1,"method":"relay/hello","params":{"ticket":5}})",
           R"({"jsonrpc":"2.0","id":1,"method":"relay/hello"})",
           R"({"jsonrpc":"2.0","method":"relay/hello","params":{"ticket":"tk"}})",  // no id
           R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"ticket":"tk"}})",
           R"({"jsonrpc":"2.0","id":1,"result":{}})",
           "not json",
           R"([{"jsonrpc":"2.0","id":1,"method":"relay/hello","params":{"ticket":"tk"}}])",
       }) {
    EXPECT_FALSE(ParseTabHello(text, 100).has_value()) << text;
  }
  // Nested deeper than the limit: refused before it is parsed.
  std::string deep = R"({"jsonrpc":"2.0","id":1,"method":"relay/hello","params":{"ticket":"tk","x":)" +
                     std::string(200, '[') + std::string(200, ']') + "}}";
  EXPECT_FALSE(ParseTabHello(deep, 100).has_value());
}

TEST(TabHelloTest, TheAnswerNamesAccountRoleTabAndAgents) {
  auto answer = nlohmann::json::parse(EncodeHelloAnswer("h1", "alice", "editor", "t-ab-3", 2));
  EXPECT_EQ(answer["id"], "h1");
  EXPECT_EQ(answer["result"]["protocol"], "1");
  EXPECT_EQ(answer["result"]["account"], "alice");
  EXPECT_EQ(answer["result"]["role"], "editor");
  EXPECT_EQ(answer["result"]["tabId"], "t-ab-3");
  EXPECT_EQ(answer["result"]["agents"], 2);
}

TEST(TabNoticeTest, TheNotificationsAgentsHearWithWhatTheRouterNeeds) {
  auto notice = ParseTabNotice(Decoded(
      R"({"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"editor://view","_meta":{"relay/line":"view changed","relay/requestId":42}}})"));
  ASSERT_TRUE(notice.has_value());
  EXPECT_EQ(notice->method, "notifications/resources/updated");
  EXPECT_EQ(notice->uri, "editor://view");
  EXPECT_EQ(notice->line, "view changed");
  EXPECT_EQ(notice->call_id, 42u);
  EXPECT_EQ(nlohmann::json::parse(notice->params)["uri"], "editor://view");

  auto progress = ParseTabNotice(Decoded(
      R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p1","progress":1}})"));
  ASSERT_TRUE(progress.has_value());
  EXPECT_EQ(progress->progress_token, "p1");
  auto log = ParseTabNotice(Decoded(
      R"({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}})"));
  ASSERT_TRUE(log.has_value());
  EXPECT_EQ(log->level, "info");
  auto bare = ParseTabNotice(Decoded(R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})"));
  ASSERT_TRUE(bare.has_value());
  EXPECT_EQ(bare->params, "{}");
}

TEST(TabNoticeTest, OthersAreDropped) {
  for (const char* text : {
           R"({"jsonrpc":"2.0","method":"notifications/initialized"})",
           R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}})",
           R"({"jsonrpc":"2.0","method":"relay/anything"})",
           R"({"jsonrpc":"2.0","method":"notifications/resources/updated","params":{}})",
           R"({"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":7}})",
       }) {
    EXPECT_FALSE(ParseTabNotice(Decoded(text)).has_value()) << text;
  }
}

TEST(AgentRequestTest, OnlySamplingElicitationAndRoots) {
  EXPECT_TRUE(IsRequestToAgent("sampling/createMessage"));
  EXPECT_TRUE(IsRequestToAgent("elicitation/create"));
  EXPECT_TRUE(IsRequestToAgent("roots/list"));
  EXPECT_FALSE(IsRequestToAgent("tools/call"));
  EXPECT_FALSE(IsRequestToAgent("ping"));
}

TEST(AgentRequestTest, ReaddressedToFindItsWayBack) {
  RpcMessage message = Decoded(
      R"({"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[],"_meta":{"relay/requestId":9}}})");
  auto request = ToAgentRequest(message);
  ASSERT_TRUE(std::holds_alternative<AgentRequest>(request));
  const AgentRequest& out = std::get<AgentRequest>(request);
  EXPECT_EQ(out.call_id, 9u);
  EXPECT_EQ(out.tab_request_id, R"("s1")");
  auto sent = nlohmann::json::parse(out.message);
  EXPECT_EQ(sent["id"], R"(relay/9/"s1")");
  EXPECT_EQ(sent["method"], "sampling/createMessage");
  EXPECT_FALSE(sent["params"].contains("_meta"));  // the relay's own key is not passed on
  EXPECT_TRUE(sent["params"]["messages"].is_array());
}

TEST(AgentRequestTest, OtherMetaIsKept) {
  RpcMessage message = Decoded(
      R"({"jsonrpc":"2.0","id":3,"method":"roots/list","params":{"_meta":{"relay/requestId":1,"x":true}}})");
  auto request = ToAgentRequest(message);
  ASSERT_TRUE(std::holds_alternative<AgentRequest>(request));
  auto sent = nlohmann::json::parse(std::get<AgentRequest>(request).message);
  EXPECT_EQ(sent["id"], "relay/1/3");
  EXPECT_EQ(sent["params"]["_meta"], nlohmann::json({{"x", true}}));
}

TEST(AgentRequestTest, WithoutTheCallInProgressItIsRefused) {
  for (const char* text : {
           R"({"jsonrpc":"2.0","id":3,"method":"roots/list"})",
           R"({"jsonrpc":"2.0","id":3,"method":"roots/list","params":{"_meta":{"relay/requestId":"9"}}})",
           R"({"jsonrpc":"2.0","id":3,"method":"roots/list","params":{"_meta":{"relay/requestId":-1}}})",
       }) {
    RpcMessage message = Decoded(text);
    auto request = ToAgentRequest(message);
    ASSERT_TRUE(std::holds_alternative<std::string>(request)) << text;
    EXPECT_NE(std::get<std::string>(request).find("relay/requestId"), std::string::npos);
  }
}

TEST(AgentRequestTest, TheAgentsAnswerIdLeadsBackToTheCallAndTheTabsId) {
  RpcMessage message = Decoded(
      R"({"jsonrpc":"2.0","id":"tab/7","method":"roots/list","params":{"_meta":{"relay/requestId":77}}})");
  auto request = ToAgentRequest(message);
  ASSERT_TRUE(std::holds_alternative<AgentRequest>(request));
  auto sent = nlohmann::json::parse(std::get<AgentRequest>(request).message);
  uint64_t call_id = 0;
  std::string tab_request_id;
  ASSERT_TRUE(ParseAgentReplyId(sent["id"], &call_id, &tab_request_id));
  EXPECT_EQ(call_id, 77u);
  EXPECT_EQ(tab_request_id, R"("tab/7")");  // slashes in the tab's own id survive
  for (const char* id : {R"(5)", R"("relay/")", R"("relay/x/1")", R"("relay/5/")", R"("other/5/1")",
                         R"("relay/5")"}) {
    EXPECT_FALSE(ParseAgentReplyId(nlohmann::json::parse(id), &call_id, &tab_request_id)) << id;
  }
}

TEST(TabProtocolTest, AnAnswerNestedTooDeepBecomesAnErrorTheAgentCanRead) {
  TabAnswer tool = UnreadableAnswer(/*is_tool_call=*/true, "nested deeper than 100 levels");
  EXPECT_FALSE(tool.is_error);  // a tool result with isError, for the model to read
  auto result = nlohmann::json::parse(tool.payload);
  EXPECT_EQ(result["isError"], true);
  EXPECT_NE(result["content"][0]["text"].get<std::string>().find("deeper than 100"),
            std::string::npos);

  TabAnswer other = UnreadableAnswer(/*is_tool_call=*/false, "nested deeper than 100 levels");
  EXPECT_TRUE(other.is_error);
  auto error = nlohmann::json::parse(other.payload);
  EXPECT_EQ(error["code"], kInternalError);
  EXPECT_NE(error["message"].get<std::string>().find("deeper than 100"), std::string::npos);
}

TEST(TabProtocolTest, TheHellosClientNameAndVersionAreBounded) {
  std::string long_name(500, 'n');
  auto hello = ParseTabHello(
      R"({"jsonrpc":"2.0","id":1,"method":"relay/hello","params":{"ticket":"t","client":{"name":")" +
          long_name + R"(","version":"\u001b[2J1.0"}}})",
      100);
  ASSERT_TRUE(hello.has_value());
  EXPECT_EQ(hello->client_name, std::string(kMaxClientText, 'n'));
  // Kept as sent (escaped where it is shown), only bounded.
  EXPECT_EQ(hello->client_version, "\x1b[2J1.0");
}

}  // namespace
}  // namespace relay::gateway
