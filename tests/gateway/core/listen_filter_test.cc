#include "gateway/core/listen_filter.h"

#include "gtest/gtest.h"

namespace relay::gateway {
namespace {

ListenFilter Make(nlohmann::json notifications, nlohmann::json id = "listen:1") {
  auto parsed = ListenFilter::Parse(id, {{"notifications", std::move(notifications)}}, 3);
  EXPECT_TRUE(std::holds_alternative<ListenFilter>(parsed));
  return std::get<ListenFilter>(parsed);
}

TEST(ListenFilter, AcknowledgesWhatItHonorsTaggedWithTheRequestId) {
  ListenFilter filter = Make({{"toolsListChanged", true}, {"promptsListChanged", false},
                              {"resourceSubscriptions", {"test://a"}}},
                             42);
  auto ack = nlohmann::json::parse(filter.Acknowledged());
  EXPECT_EQ(ack["method"], "notifications/subscriptions/acknowledged");
  EXPECT_EQ(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 42);
  EXPECT_EQ(ack["params"]["notifications"],
            (nlohmann::json{{"toolsListChanged", true}, {"resourceSubscriptions", {"test://a"}}}));
}

TEST(ListenFilter, PassesOnlyWhatWasAskedFor) {
  ListenFilter filter = Make({{"promptsListChanged", true}, {"resourceSubscriptions", {"test://a"}}});
  EXPECT_FALSE(filter.Pass(R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})"));
  auto prompts = filter.Pass(R"({"jsonrpc":"2.0","method":"notifications/prompts/list_changed","params":{}})");
  ASSERT_TRUE(prompts);
  EXPECT_EQ(nlohmann::json::parse(*prompts)["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            "listen:1");
  EXPECT_TRUE(filter.Pass(R"({"method":"notifications/resources/updated","params":{"uri":"test://a"}})"));
  EXPECT_FALSE(filter.Pass(R"({"method":"notifications/resources/updated","params":{"uri":"test://b"}})"));
  EXPECT_FALSE(filter.Pass(R"({"method":"notifications/message","params":{"level":"error"}})"));
  EXPECT_FALSE(filter.Pass("not json"));
}

TEST(ListenFilter, ClosesWithTheListenRequestsResult) {
  auto closed = nlohmann::json::parse(Make({{"toolsListChanged", true}}).Closed());
  EXPECT_EQ(closed["id"], "listen:1");
  EXPECT_EQ(closed["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "listen:1");
  EXPECT_EQ(closed["result"]["resultType"], "complete");
}

TEST(ListenFilter, RefusesParamsToFix) {
  EXPECT_TRUE(std::holds_alternative<std::string>(ListenFilter::Parse(1, nlohmann::json::object(), 3)));
  EXPECT_TRUE(std::holds_alternative<std::string>(
      ListenFilter::Parse(1, {{"notifications", {{"resourceSubscriptions", {1}}}}}, 3)));
  EXPECT_TRUE(std::holds_alternative<std::string>(ListenFilter::Parse(
      1, {{"notifications", {{"resourceSubscriptions", {"a", "b", "c", "d"}}}}}, 3)));
}

}  // namespace
}  // namespace relay::gateway
