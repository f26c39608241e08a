#include "router/call_registry.h"

#include "gtest/gtest.h"

namespace relay::router {
namespace {

class RecordingSink : public CallSink {
 public:
  void Complete(CallOutcome outcome) override { outcomes.push_back(std::move(outcome)); }
  std::vector<CallOutcome> outcomes;
};

TEST(CallRegistry, IdsAreIncreasingFromTheBase) {
  CallRegistry calls(1000);
  RecordingSink sink;
  EXPECT_EQ(calls.Add(TabRef{1, 1}, &sink), 1000u);
  EXPECT_EQ(calls.Add(TabRef{1, 1}, &sink), 1001u);
}

TEST(CallRegistry, ACallIsTakenOnce) {
  CallRegistry calls(1);
  RecordingSink sink;
  uint64_t id = calls.Add(TabRef{1, 1}, &sink);
  EXPECT_EQ(calls.Take(id, TabRef{1, 1}), &sink);
  EXPECT_EQ(calls.Take(id, TabRef{1, 1}), nullptr);
  EXPECT_EQ(calls.TakeAny(id).first, nullptr);
}

TEST(CallRegistry, OnlyTheCallsTabMayTakeIt) {
  CallRegistry calls(1);
  RecordingSink sink;
  uint64_t id = calls.Add(TabRef{1, 1}, &sink);
  EXPECT_EQ(calls.Take(id, TabRef{2, 1}), nullptr);
  EXPECT_EQ(calls.Take(id, TabRef{1, 1}), &sink);
}

TEST(CallRegistry, TakeAllOfATab) {
  CallRegistry calls(1);
  RecordingSink a, b, c;
  calls.Add(TabRef{1, 1}, &a);
  calls.Add(TabRef{1, 1}, &b);
  uint64_t other = calls.Add(TabRef{1, 2}, &c);
  EXPECT_EQ(calls.InFlight(TabRef{1, 1}), 2u);
  EXPECT_EQ(calls.TakeAllOf(TabRef{1, 1}).size(), 2u);
  EXPECT_EQ(calls.InFlight(TabRef{1, 1}), 0u);
  EXPECT_EQ(calls.TakeAny(other).first, &c);
  EXPECT_EQ(calls.TakeAny(other).second, TabRef{});
}

}  // namespace
}  // namespace relay::router
