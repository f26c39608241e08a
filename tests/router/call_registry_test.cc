#include "router/call_registry.h"

#include "gtest/gtest.h"

namespace relay::router {
namespace {

class RecordingSink : public CallSink {
 public:
  void Event(std::string message) override { events.push_back(std::move(message)); }
  void Complete(CallOutcome outcome) override { outcomes.push_back(std::move(outcome)); }
  std::vector<std::string> events;
  std::vector<CallOutcome> outcomes;
};

TEST(CallRegistry, IdsAreIncreasingFromTheBase) {
  CallRegistry calls(1000);
  RecordingSink sink;
  EXPECT_EQ(calls.Add(TabRef{1, 1}, &sink, {}), 1000u);
  EXPECT_EQ(calls.Add(TabRef{1, 1}, &sink, {}), 1001u);
}

TEST(CallRegistry, ACallIsTakenOnce) {
  CallRegistry calls(1);
  RecordingSink sink;
  uint64_t id = calls.Add(TabRef{1, 1}, &sink, {});
  auto [taken, tab] = calls.TakeAny(id);
  EXPECT_EQ(taken, &sink);
  EXPECT_EQ(tab, (TabRef{1, 1}));
  EXPECT_EQ(calls.TakeAny(id).first, nullptr);
}

TEST(CallRegistry, TakeAllOfATab) {
  CallRegistry calls(1);
  RecordingSink a, b, c;
  calls.Add(TabRef{1, 1}, &a, {});
  calls.Add(TabRef{1, 1}, &b, {});
  uint64_t other = calls.Add(TabRef{1, 2}, &c, {});
  EXPECT_EQ(calls.InFlight(TabRef{1, 1}), 2u);
  EXPECT_EQ(calls.TakeAllOf(TabRef{1, 1}).size(), 2u);
  EXPECT_EQ(calls.InFlight(TabRef{1, 1}), 0u);
  EXPECT_EQ(calls.TakeAny(other).first, &c);
  EXPECT_EQ(calls.TakeAny(other).second, TabRef{});
}

TEST(CallRegistry, FindsCallsByRequestIdAndProgressToken) {
  CallRegistry calls(1);
  RecordingSink sink;
  uint64_t id = calls.Add(TabRef{1, 1}, &sink, CallInfo{"s1", "7", "p-1", true});
  EXPECT_EQ(calls.FindByRequest("s1", "7"), id);
  EXPECT_EQ(calls.FindByRequest("s2", "7"), 0u);  // another session's request 7
  EXPECT_EQ(calls.FindByProgressToken("p-1"), id);
  EXPECT_EQ(calls.TakeAny(id).first, &sink);
  EXPECT_EQ(calls.FindByRequest("s1", "7"), 0u);
  EXPECT_EQ(calls.FindByProgressToken("p-1"), 0u);
}

TEST(CallRegistry, WithReachesOnlyCallsInFlightOfThatTab) {
  CallRegistry calls(1);
  RecordingSink sink;
  uint64_t id = calls.Add(TabRef{1, 1}, &sink, {});
  TabRef other{2, 1};
  EXPECT_FALSE(calls.With(id, &other, [](CallSink&, const CallInfo&, const TabRef&) {}));
  EXPECT_TRUE(calls.With(id, nullptr, [](CallSink& s, const CallInfo&, const TabRef&) {
    s.Event("progress");
  }));
  EXPECT_EQ(sink.events.size(), 1u);
  calls.TakeAny(id);
  EXPECT_FALSE(calls.With(id, nullptr, [](CallSink&, const CallInfo&, const TabRef&) {}));
}

}  // namespace
}  // namespace relay::router
