// RouterHub's contract with the links, through fake writers: each entry point
// runs the core under the hub's lock, queues the commands on their links'
// writers in the core's order, and flushes each touched writer once, after
// the lock is released.
#include "router/rpc/router_hub.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

namespace relay::router {
namespace {

using relay::v1::Failure;
using relay::v1::GatewayBatch;
using relay::v1::GatewayEvent;
using relay::v1::RouterCommand;

// Records what the hub queues and when it flushes. Flush reads the hub: were
// the hub's lock still held there, the read would deadlock (absl::Mutex is not
// reentrant), so a passing test shows the flush comes after the release.
class FakeLinkWriter final : public LinkWriter {
 public:
  void Push(const RouterCommand& command) override {
    absl::MutexLock lock(&mu_);
    log_.push_back(absl::StrCat("push:", command.command_case()));
    commands_.push_back(command);
  }
  void Flush() override {
    if (hub_ != nullptr) {
      hub_->Read([](const RouterCore&) { return 0; });
    }
    absl::MutexLock lock(&mu_);
    log_.push_back("flush");
  }
  std::vector<RouterCommand> commands() {
    absl::MutexLock lock(&mu_);
    return commands_;
  }
  std::vector<std::string> TakeLog() {
    absl::MutexLock lock(&mu_);
    return std::exchange(log_, {});
  }
  RouterHub* hub_ = nullptr;

 private:
  absl::Mutex mu_;
  std::vector<RouterCommand> commands_;
  std::vector<std::string> log_;
};

class RouterHubTest : public ::testing::Test {
 protected:
  RouterHubTest() {
    tab_side_->hub_ = &hub_;
    agent_side_->hub_ = &hub_;
    tab_link_ = hub_.AddLink(tab_side_);
    agent_link_ = hub_.AddLink(agent_side_);
  }

  void Handle(uint64_t link, std::vector<GatewayEvent> events) {
    GatewayBatch batch;
    for (GatewayEvent& event : events) {
      *batch.add_events() = std::move(event);
    }
    hub_.Handle(link, batch);
  }

  static GatewayEvent TabUp(uint64_t tab, const std::string& account) {
    GatewayEvent e;
    e.mutable_tab_up()->set_tab_id(tab);
    e.mutable_tab_up()->set_account(account);
    return e;
  }
  static GatewayEvent Start(uint64_t ref, const std::string& account) {
    GatewayEvent e;
    auto* start = e.mutable_call_start();
    start->set_call_ref(ref);
    start->set_account(account);
    start->set_session_id("s1");
    start->set_method("tools/call");
    start->set_params(R"({"name":"get_view"})");
    start->set_request_id("7");
    return e;
  }

  RouterHub hub_;
  std::shared_ptr<FakeLinkWriter> tab_side_ = std::make_shared<FakeLinkWriter>();
  std::shared_ptr<FakeLinkWriter> agent_side_ = std::make_shared<FakeLinkWriter>();
  uint64_t tab_link_ = 0;
  uint64_t agent_link_ = 0;
};

TEST_F(RouterHubTest, GivesEachLinkAnIdOfItsOwn) {
  EXPECT_NE(tab_link_, 0u);
  EXPECT_NE(agent_link_, 0u);
  EXPECT_NE(tab_link_, agent_link_);
}

TEST_F(RouterHubTest, QueuesACallsCommandsInOrderAndFlushesEachLinkOnceAfterTheLock) {
  Handle(tab_link_, {TabUp(7, "alice")});
  EXPECT_EQ(tab_side_->TakeLog(),
            (std::vector<std::string>{absl::StrCat("push:", RouterCommand::kTabAccepted), "flush"}));

  // Two calls in one batch: both delivered, in order, with one flush.
  Handle(agent_link_, {Start(1, "alice"), Start(2, "alice")});
  std::vector<std::string> log = tab_side_->TakeLog();
  const std::string deliver = absl::StrCat("push:", RouterCommand::kDeliver);
  ASSERT_GE(log.size(), 3u);
  EXPECT_EQ(log[log.size() - 1], "flush");
  EXPECT_EQ(std::count(log.begin(), log.end(), "flush"), 1);
  EXPECT_EQ(std::count(log.begin(), log.end(), deliver), 2);
  std::vector<RouterCommand> sent = tab_side_->commands();
  std::vector<uint64_t> delivered;
  for (const RouterCommand& c : sent) {
    if (c.has_deliver()) delivered.push_back(c.deliver().call_id());
  }
  ASSERT_EQ(delivered.size(), 2u);
  EXPECT_LT(delivered[0], delivered[1]);  // the first call started is the first delivered

  // The tab answers the first: the agent's link hears its end, nobody else.
  GatewayEvent reply;
  reply.mutable_tab_reply()->set_tab_id(7);
  reply.mutable_tab_reply()->set_call_id(delivered[0]);
  reply.mutable_tab_reply()->set_payload(R"({"content":[]})");
  agent_side_->TakeLog();
  Handle(tab_link_, {std::move(reply)});
  std::vector<RouterCommand> to_agent = agent_side_->commands();
  ASSERT_FALSE(to_agent.empty());
  EXPECT_TRUE(to_agent.back().has_call_done());
  EXPECT_EQ(to_agent.back().call_done().call_ref(), 1u);
  EXPECT_EQ(to_agent.back().call_done().result(), R"({"content":[]})");
  EXPECT_TRUE(tab_side_->TakeLog().empty());  // nothing for the tab's link: not even a flush
}

TEST_F(RouterHubTest, ALinkRemovedFailsTheCallsOfItsTabsTowardTheAgents) {
  Handle(tab_link_, {TabUp(7, "alice")});
  Handle(agent_link_, {Start(1, "alice")});
  agent_side_->TakeLog();
  hub_.RemoveLink(tab_link_);
  std::vector<RouterCommand> to_agent = agent_side_->commands();
  ASSERT_FALSE(to_agent.empty());
  const RouterCommand& done = to_agent.back();
  ASSERT_TRUE(done.has_call_done());
  EXPECT_EQ(done.call_done().call_ref(), 1u);
  EXPECT_EQ(done.call_done().failure().reason(), Failure::REASON_TAB_GONE);
  EXPECT_EQ(agent_side_->TakeLog().back(), "flush");
  // The account has no tab now: a new call fails at once.
  Handle(agent_link_, {Start(2, "alice")});
  EXPECT_EQ(agent_side_->commands().back().call_done().failure().reason(), Failure::REASON_NO_TAB);
  // And nothing more is queued on the removed link's writer.
  const size_t before = tab_side_->commands().size();
  Handle(tab_link_, {TabUp(8, "bob")});
  EXPECT_EQ(tab_side_->commands().size(), before);
}

TEST_F(RouterHubTest, MetricsCountTheTabs) {
  Handle(tab_link_, {TabUp(7, "alice"), TabUp(8, "bob")});
  EXPECT_NE(hub_.RenderMetrics().find("relay_router_tabs 2\n"), std::string::npos)
      << hub_.RenderMetrics();
  hub_.RemoveLink(tab_link_);
  EXPECT_NE(hub_.RenderMetrics().find("relay_router_tabs 0\n"), std::string::npos);
}

TEST_F(RouterHubTest, KickDisplacesTheAccountsTabOnItsLink) {
  Handle(tab_link_, {TabUp(7, "alice")});
  tab_side_->TakeLog();
  EXPECT_TRUE(hub_.Kick("alice", "an operator asked"));
  EXPECT_TRUE(tab_side_->commands().back().has_displace());
  EXPECT_EQ(tab_side_->TakeLog().back(), "flush");
  EXPECT_FALSE(hub_.Kick("nobody", "no tab"));
}

}  // namespace
}  // namespace relay::router
