#include "gateway/core/tab_calls.h"

#include <algorithm>

#include <gtest/gtest.h>

namespace relay::gateway {
namespace {

TEST(TabCallsTest, AnAnswerEndsOnlyACallInFlight) {
  TabCalls calls;
  EXPECT_TRUE(calls.empty());
  calls.Sent(1, "tools/call");
  calls.Sent(2, "resources/read");
  EXPECT_FALSE(calls.empty());
  EXPECT_EQ(calls.Finish(1), std::optional<bool>(true));
  EXPECT_EQ(calls.Finish(2), std::optional<bool>(false));
  // A second answer, or one to a call never sent: dropped.
  EXPECT_EQ(calls.Finish(1), std::nullopt);
  EXPECT_EQ(calls.Finish(99), std::nullopt);
  EXPECT_TRUE(calls.empty());
}

TEST(TabCallsTest, CallsBeforeTheHellosAnswerAreHeldInOrderThenInFlight) {
  TabCalls calls;
  calls.Hold({5, "tools/call", R"({"name":"a"})"});
  calls.Hold({6, "prompts/get", "{}"});
  // Held calls keep a draining tab open: they are still owed an answer.
  EXPECT_FALSE(calls.empty());
  EXPECT_EQ(calls.Finish(5), std::nullopt);  // not sent yet
  auto released = calls.Release();
  ASSERT_EQ(released.size(), 2u);
  EXPECT_EQ(released[0].id, 5u);
  EXPECT_EQ(released[0].params, R"({"name":"a"})");
  EXPECT_EQ(released[1].id, 6u);
  EXPECT_TRUE(calls.Release().empty());
  EXPECT_EQ(calls.Finish(5), std::optional<bool>(true));
  EXPECT_EQ(calls.Finish(6), std::optional<bool>(false));
  EXPECT_TRUE(calls.empty());
}

TEST(TabCallsTest, FinishAllEndsEveryCallInFlight) {
  TabCalls calls;
  calls.Sent(1, "tools/call");
  calls.Sent(2, "tools/call");
  auto ids = calls.FinishAll();
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<uint64_t>{1, 2}));
  EXPECT_TRUE(calls.empty());
  EXPECT_EQ(calls.Finish(1), std::nullopt);  // a late answer is dropped
}

// A call the router gave up on (the agent cancelled, its deadline passed)
// while it waited for the tab's hello to be answered is never sent to the tab.
TEST(TabCallsTest, ACallHeldBeforeTheHelloCanBeCancelledAndIsNeverSent) {
  TabCalls calls;
  calls.Hold({7, "tools/call", "{}"});
  calls.Hold({8, "resources/read", "{}"});
  EXPECT_EQ(calls.Finish(7), std::nullopt);  // a tab cannot answer what it was not sent
  EXPECT_EQ(calls.GiveUp(7), TabCalls::GivenUp::kWasHeld);
  EXPECT_EQ(calls.GiveUp(7), TabCalls::GivenUp::kNone);
  auto released = calls.Release();
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(released[0].id, 8u);
}

TEST(TabCallsTest, GivingUpASentCallEndsIt) {
  TabCalls calls;
  calls.Sent(3, "tools/call");
  EXPECT_EQ(calls.GiveUp(3), TabCalls::GivenUp::kWasSent);
  EXPECT_EQ(calls.Finish(3), std::nullopt);
  EXPECT_TRUE(calls.empty());
}

TEST(TabCallsTest, FinishAllDropsHeldCallsUnsent) {
  TabCalls calls;
  calls.Hold({7, "tools/call", "{}"});
  EXPECT_TRUE(calls.FinishAll().empty());
  EXPECT_TRUE(calls.empty());
  EXPECT_TRUE(calls.Release().empty());
}

}  // namespace
}  // namespace relay::gateway
