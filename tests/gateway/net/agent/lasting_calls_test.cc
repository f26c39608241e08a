#include "gateway/net/agent/lasting_calls.h"

#include <chrono>
#include <memory>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "testing/run_until.h"

namespace relay::gateway {
namespace {

using Clock = std::chrono::steady_clock;

class Recorder : public LastingCallOwner {
 public:
  explicit Recorder(std::vector<uint64_t>& told) : told_(told) {}
  void OnCallLasting(uint64_t call) override { told_.push_back(call); }

 private:
  std::vector<uint64_t>& told_;
};

bool RunUntilTold(boost::asio::io_context& io, const std::vector<uint64_t>& told, size_t n) {
  return relay::testing::RunUntil(io, [&] { return told.size() >= n; });
}

TEST(LastingCallsTest, EachCallIsToldOnceItsTimeHasComeNotBefore) {
  boost::asio::io_context io;
  LastingCalls& calls = LastingCalls::Of(io.get_executor());
  EXPECT_EQ(&calls, &LastingCalls::Of(io.get_executor()));  // one per io_context
  std::vector<uint64_t> told;
  auto owner = std::make_shared<Recorder>(told);
  const auto start = Clock::now();
  // Far enough apart that a stalled machine does not tell both at once.
  calls.Add(start + std::chrono::milliseconds(30), owner, 1);
  calls.Add(start + std::chrono::milliseconds(300), owner, 2);
  ASSERT_TRUE(RunUntilTold(io, told, 1));
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(30));
  EXPECT_EQ(told, std::vector<uint64_t>{1});
  ASSERT_TRUE(RunUntilTold(io, told, 2));
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(300));
  EXPECT_EQ(told, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(calls.held(), 0u);
}

// Calls due close together are told by one firing of the timer, not one each: at one call
// after the other, the next is due within a millisecond.
TEST(LastingCallsTest, CallsDueWithinTheSlackAreToldTogether) {
  boost::asio::io_context io;
  LastingCalls& calls = LastingCalls::Of(io.get_executor());
  std::vector<uint64_t> told;
  auto owner = std::make_shared<Recorder>(told);
  const auto start = Clock::now();
  for (uint64_t call = 1; call <= 5; ++call) {
    calls.Add(start + std::chrono::milliseconds(call), owner, call);
  }
  // The first handler that tells anything tells all five.
  ASSERT_TRUE(RunUntilTold(io, told, 1));
  EXPECT_EQ(told, (std::vector<uint64_t>{1, 2, 3, 4, 5}));
}

// An owner gone before its time (its connection closed) is skipped; the others are told.
TEST(LastingCallsTest, AnOwnerGoneMeanwhileIsSkipped) {
  boost::asio::io_context io;
  LastingCalls& calls = LastingCalls::Of(io.get_executor());
  std::vector<uint64_t> told;
  auto gone = std::make_shared<Recorder>(told);
  auto stays = std::make_shared<Recorder>(told);
  const auto now = Clock::now();
  calls.Add(now + std::chrono::milliseconds(1), gone, 1);
  calls.Add(now + std::chrono::milliseconds(2), stays, 2);
  gone.reset();
  ASSERT_TRUE(RunUntilTold(io, told, 1));
  EXPECT_EQ(told, std::vector<uint64_t>{2});
  EXPECT_EQ(calls.held(), 0u);
}

// An io_context destroyed with its timer armed and calls waiting: the service goes before the
// timer's service and the reactor, with nothing left behind (run under ASan and its leak check
// by scripts/test.sh, which sees a timer or a handler that outlives them).
TEST(LastingCallsTest, AContextThatEndsWithCallsWaitingLetsThemGo) {
  std::vector<uint64_t> told;
  auto owner = std::make_shared<Recorder>(told);
  {
    boost::asio::io_context io;
    LastingCalls::Of(io.get_executor()).Add(Clock::now() + std::chrono::hours(1), owner, 1);
    owner.reset();
  }
  EXPECT_TRUE(told.empty());
}

}  // namespace
}  // namespace relay::gateway
