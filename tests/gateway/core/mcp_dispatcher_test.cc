#include "gateway/core/mcp_dispatcher.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace relay::gateway {
namespace {

class McpDispatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dispatcher-test-XXXXXX";
    int fd = mkstemp(tmpl);
    close(fd);
    path_ = tmpl;
    std::ofstream(path_) << R"({"tools":[{"name":"get_view"}]})";
    catalogue_ = *CatalogueFile::Open(path_);
    dispatcher_ = std::make_unique<McpDispatcher>(signer_, *catalogue_, ended_, DispatchOptions{});
  }
  void TearDown() override { std::remove(path_.c_str()); }

  decltype(PostDecision::action) Post(const std::string& body,
                                            std::optional<std::string> session = std::nullopt,
                                            std::optional<std::string> version = std::nullopt,
                                            const std::string& account = "alice") {
    return Decide(body, session, version, account).action;
  }
  PostDecision Decide(const std::string& body, std::optional<std::string> session = std::nullopt,
                      std::optional<std::string> version = std::nullopt,
                      const std::string& account = "alice") {
    return dispatcher_->HandlePost(account, AgentHeaders{session, version, true, role_, {}, {}, {}}, body);
  }
  HttpReply Reply(const decltype(PostDecision::action)& d) {
    EXPECT_TRUE(std::holds_alternative<HttpReply>(d));
    return std::get<HttpReply>(d);
  }
  std::string Initialize(const std::string& account = "alice") {
    return Reply(Post(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}})",
                      std::nullopt, std::nullopt, account))
        .session_id;
  }

  std::string role_;  // the token's role of the requests Decide makes
  SessionIdSigner signer_{"test-secret"};
  EndedSessions ended_;
  std::string path_;
  std::unique_ptr<CatalogueFile> catalogue_;
  std::unique_ptr<McpDispatcher> dispatcher_;
};

TEST_F(McpDispatcherTest, InitializeEchoesASupportedVersionAndIssuesASession) {
  HttpReply r = Reply(Post(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26"}})"));
  EXPECT_EQ(r.status, 200);
  auto body = nlohmann::json::parse(r.body);
  EXPECT_EQ(body["id"], 0);
  EXPECT_EQ(body["result"]["protocolVersion"], "2025-03-26");
  EXPECT_TRUE(body["result"]["capabilities"]["resources"]["subscribe"]);
  EXPECT_EQ(*signer_.Verify(r.session_id), "alice");
}

TEST_F(McpDispatcherTest, InitializeWithAnUnknownVersionAnswersTheNewest) {
  HttpReply r = Reply(Post(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1999-01-01"}})"));
  EXPECT_EQ(nlohmann::json::parse(r.body)["result"]["protocolVersion"], "2025-11-25");
}

TEST_F(McpDispatcherTest, UnsupportedVersionHeaderIs400) {
  EXPECT_EQ(Reply(Post(R"({"jsonrpc":"2.0","id":1,"method":"ping"})", Initialize(), "2024-01-01")).status, 400);
  // Any supported version is accepted, also one that was not negotiated.
  EXPECT_EQ(Reply(Post(R"({"jsonrpc":"2.0","id":1,"method":"ping"})", Initialize(), "2025-11-25")).status, 200);
}

TEST_F(McpDispatcherTest, MissingSessionIs400AndBadOrForeignSessionIs404) {
  EXPECT_EQ(Reply(Post(R"({"jsonrpc":"2.0","id":1,"method":"ping"})")).status, 400);
  EXPECT_EQ(Reply(Post(R"({"jsonrpc":"2.0","id":1,"method":"ping"})", "v1.x.y.z")).status, 404);
  std::string bobs = Initialize("bob");
  EXPECT_EQ(Reply(Post(R"({"jsonrpc":"2.0","id":1,"method":"ping"})", bobs, std::nullopt, "alice")).status, 404);
}

TEST_F(McpDispatcherTest, WithoutTheModernEraServerDiscoverIsMethodNotFoundAtOnce) {
  DispatchOptions options;
  options.modern_era = false;
  dispatcher_ = std::make_unique<McpDispatcher>(signer_, *catalogue_, ended_, options);
  HttpReply r = Reply(Post(R"({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}})"));
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(nlohmann::json::parse(r.body)["error"]["code"], kMethodNotFound);
}

TEST_F(McpDispatcherTest, ABatchsAnswersStayWithinWhatOneResponseHolds) {
  std::string session = Initialize();
  const std::string list = R"({"jsonrpc":"2.0","id":"L","method":"tools/list"})";
  const std::string ping = R"({"jsonrpc":"2.0","id":"P","method":"ping"})";
  const size_t list_bytes = Reply(Post(list, session)).body.size();
  DispatchOptions options;
  options.max_batch_answer_bytes = list_bytes + 10;  // room for tools/list's answer alone
  options.max_batch_messages = 3;
  dispatcher_ = std::make_unique<McpDispatcher>(signer_, *catalogue_, ended_, options);
  // tools/list's answer, then a ping's, which passes the room: the ping's is the error.
  PostDecision d = Decide("[" + list + "," + ping + "]", session, "2025-03-26");
  ASSERT_EQ(d.batch.size(), 2u);
  auto first = nlohmann::json::parse(Reply(d.batch[0].action).body);
  EXPECT_TRUE(first.contains("result"));
  auto second = nlohmann::json::parse(Reply(d.batch[1].action).body);
  EXPECT_EQ(second["id"], "P");
  EXPECT_EQ(second["error"]["code"], kInternalError);
  EXPECT_NE(second["error"]["message"].get<std::string>().find("send this request alone"),
            std::string::npos);
  // Four messages where three are allowed: the whole batch is refused.
  HttpReply refused = Reply(Post("[" + ping + "," + ping + "," + ping + "," + ping + "]", session,
                                 "2025-03-26"));
  EXPECT_EQ(refused.status, 400);
  EXPECT_NE(refused.body.find("at most 3 messages"), std::string::npos);
}

TEST_F(McpDispatcherTest, NotificationsAre202) {
  HttpReply r = Reply(Post(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", Initialize()));
  EXPECT_EQ(r.status, 202);
  EXPECT_TRUE(r.body.empty());
}

TEST_F(McpDispatcherTest, ToolsListComesFromTheCatalogue) {
  HttpReply r = Reply(Post(R"({"jsonrpc":"2.0","id":"l","method":"tools/list"})", Initialize()));
  auto body = nlohmann::json::parse(r.body);
  EXPECT_EQ(body["id"], "l");
  EXPECT_EQ(body["result"]["tools"][0]["name"], "get_view");
}

TEST_F(McpDispatcherTest, ACallsParamsReachTheTabAsTheAgentWroteThem) {
  const std::string params = R"({ "arguments": {"n": 1.50e2, "big": 123456789012345678901}, "name" : "get_view" })";
  auto d = Post(absl::StrCat(R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":)", params, "}"),
                Initialize());
  ASSERT_TRUE(std::holds_alternative<ForwardPlan>(d));
  EXPECT_EQ(std::get<ForwardPlan>(d).request.params, params);
}

TEST_F(McpDispatcherTest, ToolCallIsForwardedWithItsParams) {
  auto d = Post(R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"get_view","arguments":{}}})", Initialize());
  ASSERT_TRUE(std::holds_alternative<ForwardPlan>(d));
  const ForwardPlan& plan = std::get<ForwardPlan>(d);
  EXPECT_TRUE(plan.is_tool_call);
  EXPECT_EQ(plan.request.account, "alice");
  EXPECT_EQ(plan.request.method, "tools/call");
  EXPECT_EQ(nlohmann::json::parse(plan.request.params)["name"], "get_view");

  HttpReply done = dispatcher_->FinishForward(plan, {ForwardOutcome::Kind::kResult, R"({"content":[]})", ""});
  EXPECT_EQ(done.body, R"({"jsonrpc":"2.0","id":5,"result":{"content":[]}})");
}

TEST_F(McpDispatcherTest, NoTabIsAToolErrorForToolsAndMinus32002Otherwise) {
  auto tool = std::get<ForwardPlan>(Post(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}})", Initialize()));
  auto body = nlohmann::json::parse(dispatcher_->FinishForward(tool, {ForwardOutcome::Kind::kNoTab, "", ""}).body);
  EXPECT_EQ(body["result"]["isError"], true);
  EXPECT_EQ(body["result"]["content"][0]["text"], std::string(kDefaultNoTabMessage));

  auto read = std::get<ForwardPlan>(Post(R"({"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"editor://view"}})", Initialize()));
  body = nlohmann::json::parse(dispatcher_->FinishForward(read, {ForwardOutcome::Kind::kNoTab, "", ""}).body);
  EXPECT_EQ(body["error"]["code"], kNoTab);
}

TEST_F(McpDispatcherTest, ParseErrorIs400WithJsonRpcError) {
  HttpReply r = Reply(Post("{not json", Initialize()));
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(nlohmann::json::parse(r.body)["error"]["code"], kParseError);
}

TEST_F(McpDispatcherTest, DeleteEndsAValidSession) {
  EXPECT_EQ(dispatcher_->HandleDelete("alice", AgentHeaders{Initialize(), {}, false, "", {}, {}, {}}).status, 204);
  EXPECT_EQ(dispatcher_->HandleDelete("alice", AgentHeaders{}).status, 400);
  EXPECT_EQ(dispatcher_->HandleDelete("alice", AgentHeaders{Initialize("bob"), {}, false, "", {}, {}, {}}).status,
            404);
}

TEST_F(McpDispatcherTest, AnEndedSessionIs404) {
  std::string session = Initialize();
  ended_.Add(session);
  EXPECT_EQ(Reply(Post(R"({"jsonrpc":"2.0","id":1,"method":"ping"})", session)).status, 404);
}

TEST_F(McpDispatcherTest, ProgressTokenIsReplacedAndRestored) {
  auto d = Post(R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"agent-7"}}})", Initialize());
  const ForwardPlan& plan = std::get<ForwardPlan>(d);
  ASSERT_FALSE(plan.request.progress_token.empty());
  auto params = nlohmann::json::parse(plan.request.params);
  EXPECT_EQ(params["_meta"]["progressToken"], plan.request.progress_token);
  std::string from_tab = nlohmann::json{{"jsonrpc", "2.0"}, {"method", "notifications/progress"},
      {"params", {{"progressToken", plan.request.progress_token}, {"progress", 1}}}}.dump();
  auto to_agent = nlohmann::json::parse(dispatcher_->AgentEvent(plan, from_tab));
  EXPECT_EQ(to_agent["params"]["progressToken"], "agent-7");
  EXPECT_EQ(to_agent["params"]["progress"], 1);
}

TEST_F(McpDispatcherTest, ViewLineIsAppendedToAToolResult) {
  auto d = Post(R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x"}})", Initialize());
  const ForwardPlan& plan = std::get<ForwardPlan>(d);
  auto body = nlohmann::json::parse(dispatcher_->FinishForward(
      plan, {ForwardOutcome::Kind::kResult, R"({"content":[{"type":"text","text":"a"}]})",
             "The user switched to the Sound tab."}).body);
  ASSERT_EQ(body["result"]["content"].size(), 2u);
  EXPECT_EQ(body["result"]["content"][1]["text"], "The user switched to the Sound tab.");
}

TEST_F(McpDispatcherTest, SessionEffects) {
  std::string session = Initialize();
  PostDecision sub = Decide(R"({"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"editor://view"}})", session);
  EXPECT_EQ(sub.effect.kind, SessionEffect::Kind::kSubscribe);
  EXPECT_EQ(sub.effect.value, "editor://view");
  PostDecision cancel = Decide(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"r1","reason":"x"}})", session);
  EXPECT_EQ(cancel.effect.kind, SessionEffect::Kind::kAgentCancel);
  EXPECT_EQ(cancel.effect.value, R"("r1")");
  PostDecision reply = Decide(R"({"jsonrpc":"2.0","id":"relay/42/7","result":{"roots":[]}})", session);
  EXPECT_EQ(std::get<HttpReply>(reply.action).status, 202);
  EXPECT_EQ(reply.effect.kind, SessionEffect::Kind::kAgentReply);
  EXPECT_EQ(reply.effect.call_id, 42u);
  EXPECT_EQ(reply.effect.tab_request_id, "7");
  PostDecision level = Decide(R"({"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"loud"}})", session);
  EXPECT_EQ(nlohmann::json::parse(std::get<HttpReply>(level.action).body)["error"]["code"], kInvalidParams);
}

// The catalogue as MCP-SURFACE.md's roles make it: entries of every kind for
// editors only, beside entries for everyone.
constexpr char kRoleCatalogue[] = R"({
  "tools": [{"name":"get_view"}, {"name":"edit","roles":["editor"]}],
  "resources": [{"uri":"doc://readme"}, {"uri":"doc://secret","roles":["editor","owner"]}],
  "resourceTemplates": [{"uriTemplate":"draft://{id}","roles":["editor"]}],
  "prompts": [{"name":"summarize"}, {"name":"rewrite","roles":["editor"]}]
})";

TEST_F(McpDispatcherTest, ListsShowEachRoleItsViewWithoutTheRolesKey) {
  std::ofstream(path_) << kRoleCatalogue;
  ASSERT_TRUE(*catalogue_->Refresh());
  std::string session = Initialize();
  auto list = [&](const char* method, const char* member) {
    auto body = nlohmann::json::parse(Reply(Post(
        absl::StrCat(R"({"jsonrpc":"2.0","id":1,"method":")", method, R"("})"), session)).body);
    std::vector<std::string> keys;
    for (const auto& item : body["result"][member]) {
      EXPECT_FALSE(item.contains("roles"));
      keys.push_back(item.contains("name")          ? item["name"].get<std::string>()
                     : item.contains("uri")         ? item["uri"].get<std::string>()
                                                    : item["uriTemplate"].get<std::string>());
    }
    return keys;
  };
  using V = std::vector<std::string>;
  role_ = "viewer";
  EXPECT_EQ(list("tools/list", "tools"), (V{"get_view"}));
  EXPECT_EQ(list("resources/list", "resources"), (V{"doc://readme"}));
  EXPECT_EQ(list("resources/templates/list", "resourceTemplates"), V{});
  EXPECT_EQ(list("prompts/list", "prompts"), (V{"summarize"}));
  role_ = "editor";
  EXPECT_EQ(list("tools/list", "tools"), (V{"get_view", "edit"}));
  EXPECT_EQ(list("resources/list", "resources"), (V{"doc://readme", "doc://secret"}));
  EXPECT_EQ(list("resources/templates/list", "resourceTemplates"), (V{"draft://{id}"}));
  EXPECT_EQ(list("prompts/list", "prompts"), (V{"summarize", "rewrite"}));
  role_ = "owner";
  EXPECT_EQ(list("resources/list", "resources"), (V{"doc://readme", "doc://secret"}));
  EXPECT_EQ(list("tools/list", "tools"), (V{"get_view"}));
}

TEST_F(McpDispatcherTest, AHiddenEntryAnswersAsAnUnknownNameAndIsNeverForwarded) {
  std::ofstream(path_) << kRoleCatalogue;
  ASSERT_TRUE(*catalogue_->Refresh());
  std::string session = Initialize();
  auto call = [&](const std::string& method, const std::string& params) {
    return Post(absl::StrCat(R"({"jsonrpc":"2.0","id":5,"method":")", method, R"(","params":)",
                             params, "}"),
                session);
  };
  auto error = [&](const decltype(PostDecision::action)& d) {
    return nlohmann::json::parse(Reply(d).body)["error"];
  };
  role_ = "viewer";
  EXPECT_EQ(error(call("tools/call", R"({"name":"edit"})"))["message"], "Unknown tool: edit");
  EXPECT_EQ(error(call("tools/call", R"({"name":"edit"})"))["code"], -32602);
  EXPECT_EQ(error(call("prompts/get", R"({"name":"rewrite"})"))["message"], "Unknown prompt: rewrite");
  // Issue 25.7: worded exactly as the reference editor answers a URI it does
  // not have (and as MCP's example does), so a hidden resource cannot be told
  // from an absent one; a subscription to it is taken as one to an unknown
  // URI is, and never subscribed.
  EXPECT_EQ(error(call("resources/read", R"({"uri":"doc://secret"})")),
            nlohmann::json::parse(
                R"({"code":-32002,"message":"Resource not found","data":{"uri":"doc://secret"}})"));
  EXPECT_EQ(error(call("resources/read", R"({"uri":"draft://42"})"))["code"], -32002);
  {
    auto subscribe = [&](const std::string& uri) {
      return Decide(absl::StrCat(R"({"jsonrpc":"2.0","id":5,"method":"resources/subscribe","params":{"uri":")",
                                 uri, R"("}})"),
                    session);
    };
    PostDecision hidden = subscribe("draft://42");
    PostDecision unknown = subscribe("nothing://here");
    EXPECT_EQ(Reply(hidden.action).body, Reply(unknown.action).body);
    EXPECT_EQ(hidden.effect.kind, SessionEffect::Kind::kNone);
    EXPECT_EQ(unknown.effect.kind, SessionEffect::Kind::kSubscribe);
  }
  EXPECT_EQ(error(call("completion/complete",
                       R"({"ref":{"type":"ref/resource","uri":"draft://{id}"},"argument":{"name":"id","value":"4"}})"))["code"],
            -32602);
  EXPECT_EQ(error(call("tools/call", R"({"name":["edit"]})"))["code"], -32602);
  EXPECT_EQ(error(call("completion/complete", R"({"ref":{"type":"ref/prompt","name":{"n":"rewrite"}}})"))["code"], -32602);
  // The name a tab would read is the one checked: escaped, or the last of two.
  EXPECT_EQ(error(call("tools/call", R"({"name":"\u0065dit"})"))["message"], "Unknown tool: edit");
  EXPECT_EQ(error(call("tools/call", R"({"name":"get_view","n\u0061me":"edit"})"))["code"], -32602);
  EXPECT_EQ(error(call("completion/complete", R"({"ref":{"uri":"doc://readme","uri":"draft://1"}})"))["code"], -32602);
  // What the role sees, and names the catalogue does not list, go to the tab as before.
  EXPECT_TRUE(std::holds_alternative<ForwardPlan>(call("tools/call", R"({"name":"get_view"})")));
  EXPECT_TRUE(std::holds_alternative<ForwardPlan>(call("resources/read", R"({"uri":"doc://readme"})")));
  EXPECT_TRUE(std::holds_alternative<ForwardPlan>(call("tools/call", R"({"name":"dynamic"})")));
  role_ = "editor";
  EXPECT_TRUE(std::holds_alternative<ForwardPlan>(call("tools/call", R"({"name":"edit"})")));
  EXPECT_TRUE(std::holds_alternative<ForwardPlan>(call("resources/read", R"({"uri":"draft://42"})")));
  EXPECT_TRUE(std::holds_alternative<ForwardPlan>(call("prompts/get", R"({"name":"rewrite"})")));
}

}  // namespace
}  // namespace relay::gateway
