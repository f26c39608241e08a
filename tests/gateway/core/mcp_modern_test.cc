// McpDispatcher's 2026-07-28 half (gateway/core/mcp_modern.cc).
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "gateway/core/mcp_dispatcher.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace relay::gateway {
namespace {

const nlohmann::json kMeta = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                              {"io.modelcontextprotocol/clientCapabilities",
                               {{"elicitation", nlohmann::json::object()}}}};

class McpModernTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/modern-test-XXXXXX";
    close(mkstemp(tmpl));
    path_ = tmpl;
    std::ofstream(path_) << R"({"tools":[{"name":"get_view","inputSchema":{"type":"object"}}]})";
    catalogue_ = *CatalogueFile::Open(path_);
    DispatchOptions options;
    options.modern_era = true;
    dispatcher_ = std::make_unique<McpDispatcher>(signer_, *catalogue_, ended_, options);
  }
  void TearDown() override { std::remove(path_.c_str()); }

  PostDecision Post(const std::string& method, nlohmann::json params,
                    const std::string& account = "alice") {
    params["_meta"] = kMeta;
    nlohmann::json body = {{"jsonrpc", "2.0"}, {"id", 9}, {"method", method}, {"params", params}};
    AgentHeaders headers;
    headers.protocol_version = "2026-07-28";
    headers.mcp_method = method;
    if (params.contains("name")) headers.mcp_name = params["name"].get<std::string>();
    if (params.contains("uri")) headers.mcp_name = params["uri"].get<std::string>();
    headers.token_key = token_key_;
    return dispatcher_->HandlePost(account, headers, body.dump());
  }
  static HttpReply ReplyOf(const PostDecision& d) {
    EXPECT_TRUE(std::holds_alternative<HttpReply>(d.action));
    return std::get<HttpReply>(d.action);
  }
  static nlohmann::json BodyOf(const PostDecision& d) {
    return nlohmann::json::parse(ReplyOf(d).body);
  }

  // Starts a call and closes a round of the given (tab id, method) requests.
  RoundDecision Round(ForwardPlan& plan, std::vector<std::pair<std::string, std::string>> asks) {
    std::vector<RoundRequest> requests;
    for (const auto& [id, method] : asks) {
      nlohmann::json message = {{"jsonrpc", "2.0"},
                                {"id", "relay/1000/" + id},
                                {"method", method},
                                {"params", {{"message", "?"}}}};
      requests.push_back(RoundRequest{1000, id, message.dump()});
    }
    return dispatcher_->DecideRound("alice", plan, requests, absl::Now());
  }

  std::string token_key_ = "abc";
  SessionIdSigner signer_{"test-secret"};
  EndedSessions ended_;
  std::string path_;
  std::unique_ptr<CatalogueFile> catalogue_;
  std::unique_ptr<McpDispatcher> dispatcher_;
};

TEST_F(McpModernTest, DiscoverNamesBothErasAndTheServer) {
  nlohmann::json body = BodyOf(Post("server/discover", nlohmann::json::object()));
  EXPECT_EQ(body["result"]["supportedVersions"][0], "2026-07-28");
  EXPECT_EQ(body["result"]["supportedVersions"][1], "2025-11-25");
  EXPECT_EQ(body["result"]["resultType"], "complete");
  EXPECT_EQ(body["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "mcp-tab-relay");
  EXPECT_EQ(body["result"]["cacheScope"], "public");
}

TEST_F(McpModernTest, ListsSayWhatTheyAreAndThatTheyMustNotBeKept) {
  nlohmann::json body = BodyOf(Post("tools/list", nlohmann::json::object()));
  EXPECT_EQ(body["result"]["tools"][0]["name"], "get_view");
  EXPECT_EQ(body["result"]["resultType"], "complete");
  EXPECT_EQ(body["result"]["ttlMs"], 0);
  EXPECT_EQ(body["result"]["cacheScope"], "private");
}

TEST_F(McpModernTest, MethodsOfThe2025EraOnlyAreNotFound) {
  for (const char* method : {"initialize", "ping", "logging/setLevel", "resources/subscribe",
                             "no/such"}) {
    PostDecision d = Post(method, nlohmann::json::object());
    EXPECT_EQ(ReplyOf(d).status, 404) << method;
    EXPECT_EQ(BodyOf(d)["error"]["code"], kMethodNotFound) << method;
  }
}

TEST_F(McpModernTest, ACallIsForwardedStatelessUnderItsTokensName) {
  PostDecision d = Post("tools/call", {{"name", "get_view"}});
  auto* plan = std::get_if<ForwardPlan>(&d.action);
  ASSERT_NE(plan, nullptr);
  EXPECT_TRUE(plan->request.stateless);
  EXPECT_EQ(plan->request.session_id, "t.abc");
  EXPECT_EQ(d.session, "t.abc");
  ASSERT_TRUE(plan->modern);
  EXPECT_TRUE(plan->modern->capabilities.elicitation);
  HttpReply reply = dispatcher_->FinishForward(
      *plan, ForwardOutcome{ForwardOutcome::Kind::kResult, R"({"content":[]})", {}});
  EXPECT_EQ(nlohmann::json::parse(reply.body)["result"]["resultType"], "complete");
}

TEST_F(McpModernTest, ARoundAsksOnlyWhatTheAgentDeclaredAndTheRetryResumesTheCall) {
  PostDecision d = Post("tools/call", {{"name", "get_view"}});
  ForwardPlan plan = std::get<ForwardPlan>(d.action);
  RoundDecision round =
      Round(plan, {{R"("name")", "elicitation/create"}, {R"("model")", "sampling/createMessage"}});
  ASSERT_TRUE(round.reply);
  nlohmann::json result = nlohmann::json::parse(round.reply->body)["result"];
  EXPECT_EQ(result["resultType"], "input_required");
  EXPECT_EQ(result["inputRequests"]["name"]["method"], "elicitation/create");
  EXPECT_FALSE(result["inputRequests"].contains("model"));
  // Sampling was not declared: the tab hears so at once.
  ASSERT_EQ(round.to_tab.size(), 1u);
  EXPECT_TRUE(round.to_tab[0].is_error);
  EXPECT_EQ(round.to_tab[0].tab_request_id, R"("model")");

  PostDecision retry = Post("tools/call", {{"name", "get_view"},
                                           {"inputResponses", {{"name", {{"action", "accept"}}}}},
                                           {"requestState", result["requestState"]}});
  auto* resumed = std::get_if<ForwardPlan>(&retry.action);
  ASSERT_NE(resumed, nullptr);
  EXPECT_EQ(resumed->request.resume_call_id, 1000u);
  ASSERT_EQ(resumed->request.answers.size(), 1u);
  EXPECT_EQ(resumed->request.answers[0].first, R"("name")");
  EXPECT_EQ(resumed->request.answers[0].second, R"({"action":"accept"})");
  EXPECT_EQ(resumed->request.params.find("requestState"), std::string::npos);
}

TEST_F(McpModernTest, ForgedForeignOrMalformedStatesAreRefused) {
  PostDecision d = Post("tools/call", {{"name", "get_view"}});
  ForwardPlan plan = std::get<ForwardPlan>(d.action);
  std::string state = nlohmann::json::parse(
      Round(plan, {{"1", "elicitation/create"}}).reply->body)["result"]["requestState"];
  for (const nlohmann::json& bad : {nlohmann::json(state + "-TAMPERED"), nlohmann::json(42),
                                    nlohmann::json("rs1.e30.AAAA")}) {
    PostDecision retry = Post("tools/call", {{"name", "get_view"}, {"requestState", bad}});
    EXPECT_EQ(ReplyOf(retry).status, 400);
    EXPECT_EQ(BodyOf(retry)["error"]["code"], kInvalidParams);
  }
  // Bob's bearer with Alice's state: as if it were forged.
  PostDecision foreign = Post("tools/call", {{"name", "get_view"}, {"requestState", state}}, "bob");
  EXPECT_EQ(BodyOf(foreign)["error"]["code"], kInvalidParams);
  // Answers that are not result objects.
  PostDecision bad_answers = Post("tools/call", {{"name", "get_view"}, {"inputResponses", {{"1", 12345}}}});
  EXPECT_EQ(BodyOf(bad_answers)["error"]["code"], kInvalidParams);
}

TEST_F(McpModernTest, NothingAskableIsMissingClientCapability) {
  PostDecision d = Post("tools/call", {{"name", "get_view"}});
  ForwardPlan plan = std::get<ForwardPlan>(d.action);
  RoundDecision round = Round(plan, {{"1", "sampling/createMessage"}});
  ASSERT_TRUE(round.reply);
  EXPECT_EQ(round.reply->status, 400);
  EXPECT_TRUE(round.cancel_call);
  nlohmann::json body = nlohmann::json::parse(round.reply->body);
  EXPECT_EQ(body["error"]["code"], kMissingClientCapability);
  EXPECT_TRUE(body["error"]["data"]["requiredCapabilities"]["sampling"].is_object());
}

TEST_F(McpModernTest, AnswersSentWithTheFirstCallAnswerTheTabWithoutARound) {
  PostDecision d = Post("tools/call", {{"name", "get_view"},
                                       {"inputResponses", {{"user_name", {{"action", "accept"}}}}}});
  ForwardPlan plan = std::get<ForwardPlan>(d.action);
  RoundDecision round = Round(plan, {{R"("user_name")", "elicitation/create"}});
  EXPECT_FALSE(round.reply);
  ASSERT_EQ(round.to_tab.size(), 1u);
  EXPECT_FALSE(round.to_tab[0].is_error);
  EXPECT_EQ(round.to_tab[0].payload, R"({"action":"accept"})");
}

TEST_F(McpModernTest, LogsReachTheAgentOnlyFromTheLevelItAsked) {
  PostDecision d = Post("tools/call", {{"name", "get_view"}});
  ForwardPlan plan = std::get<ForwardPlan>(d.action);
  const std::string info = R"({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}})";
  EXPECT_FALSE(dispatcher_->PassesModern(plan, info));
  plan.modern->log_rank = LogRank("info");
  EXPECT_TRUE(dispatcher_->PassesModern(plan, info));
  plan.modern->log_rank = LogRank("error");
  EXPECT_FALSE(dispatcher_->PassesModern(plan, info));
  // Progress only when this request asked for it (a retry may not have).
  EXPECT_FALSE(dispatcher_->PassesModern(plan, R"({"method":"notifications/progress"})"));
  plan.agent_progress_token = "p";
  EXPECT_TRUE(dispatcher_->PassesModern(plan, R"({"method":"notifications/progress"})"));
}

TEST_F(McpModernTest, AStateResumesOnlyTheSameRequestWithTheSameToken) {
  std::ofstream(path_) << R"({"tools":[{"name":"get_view"},{"name":"other"}]})";
  ASSERT_TRUE(catalogue_->Refresh().ok());
  PostDecision d = Post("tools/call", {{"name", "get_view"}});
  ForwardPlan plan = std::get<ForwardPlan>(d.action);
  std::string state = nlohmann::json::parse(
      Round(plan, {{"1", "elicitation/create"}}).reply->body)["result"]["requestState"];
  EXPECT_EQ(BodyOf(Post("tools/call", {{"name", "other"}, {"requestState", state}}))["error"]["code"],
            kInvalidParams);
  EXPECT_EQ(BodyOf(Post("resources/read", {{"uri", "get_view"}, {"requestState", state}}))["error"]["code"],
            kInvalidParams);
  token_key_ = "another-token";
  EXPECT_EQ(BodyOf(Post("tools/call", {{"name", "get_view"}, {"requestState", state}}))["error"]["code"],
            kInvalidParams);
  token_key_ = "abc";
  PostDecision retry = Post("tools/call", {{"name", "get_view"}, {"requestState", state}});
  auto* resumed = std::get_if<ForwardPlan>(&retry.action);
  ASSERT_NE(resumed, nullptr);
  EXPECT_EQ(resumed->request.resume_round, 1u);
}

TEST_F(McpModernTest, OnlyCallsThatMayAnswerInputRequiredAskTheAgent) {
  PostDecision d = Post("completion/complete", {{"ref", {{"type", "ref/prompt"}, {"name", "p"}}}});
  ForwardPlan plan = std::get<ForwardPlan>(d.action);
  RoundDecision round = Round(plan, {{"1", "elicitation/create"}});
  EXPECT_FALSE(round.reply);
  ASSERT_EQ(round.to_tab.size(), 1u);
  EXPECT_TRUE(round.to_tab[0].is_error);
}

TEST_F(McpModernTest, KeysOfARoundAreUniqueAndMapBackToTheTabsIds) {
  PostDecision d = Post("tools/call", {{"name", "get_view"}});
  ForwardPlan plan = std::get<ForwardPlan>(d.action);
  // The string "5" and the number 5 are two requests of the tab.
  nlohmann::json result = nlohmann::json::parse(
      Round(plan, {{R"("5")", "elicitation/create"}, {"5", "elicitation/create"}}).reply->body)["result"];
  ASSERT_EQ(result["inputRequests"].size(), 2u);
  ASSERT_TRUE(result["inputRequests"].contains("5#2"));
  PostDecision retry = Post("tools/call", {{"name", "get_view"},
                                           {"inputResponses", {{"5", {{"a", 1}}}, {"5#2", {{"b", 2}}}}},
                                           {"requestState", result["requestState"]}});
  auto* resumed = std::get_if<ForwardPlan>(&retry.action);
  ASSERT_NE(resumed, nullptr);
  ASSERT_EQ(resumed->request.answers.size(), 2u);
  EXPECT_EQ(resumed->request.answers[0], (std::pair<std::string, std::string>{R"("5")", R"({"a":1})"}));
  EXPECT_EQ(resumed->request.answers[1], (std::pair<std::string, std::string>{"5", R"({"b":2})"}));
}

}  // namespace
}  // namespace relay::gateway
