#include "gateway/core/call_gate.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace relay::gateway {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1000);

// Calls that record, in one log, which of them started or was refused.
struct Log {
  std::vector<std::string> events;
  CallGate::Waiting Call(const std::string& name, absl::Time since = kNow) {
    return {[this, name] { events.push_back("start " + name); },
            [this, name] { events.push_back("refuse " + name); }, since};
  }
};

CallGate::Entry Enter(CallGate& gate, CallGate::Waiting call) { return gate.Enter(call); }

void RunReleased(CallGate::Released released) {
  for (auto& refused : released.refused) {
    refused.refuse();
  }
  if (released.start) {
    released.start->start();
  }
}

TEST(CallGateTest, BeyondTheBoundCallsWaitAndStartInOrderAsPlacesFree) {
  CallGate gate({.most_in_flight = 2});
  Log log;
  EXPECT_EQ(Enter(gate, log.Call("a")), CallGate::Entry::kStartNow);
  EXPECT_EQ(Enter(gate, log.Call("b")), CallGate::Entry::kStartNow);
  EXPECT_EQ(Enter(gate, log.Call("c")), CallGate::Entry::kWaiting);
  EXPECT_EQ(Enter(gate, log.Call("d")), CallGate::Entry::kWaiting);
  EXPECT_EQ(gate.in_flight(), 2u);
  EXPECT_EQ(gate.waiting(), 2u);

  RunReleased(gate.Leave(kNow));  // a ends: c takes its place
  EXPECT_EQ(log.events, std::vector<std::string>{"start c"});
  EXPECT_EQ(gate.in_flight(), 2u);
  RunReleased(gate.Leave(kNow));  // b ends: d
  RunReleased(gate.Leave(kNow));  // c ends: nobody waits
  EXPECT_EQ(log.events, (std::vector<std::string>{"start c", "start d"}));
  EXPECT_EQ(gate.in_flight(), 1u);
  EXPECT_EQ(gate.waiting(), 0u);
  // A place is free again: the next call starts at once.
  EXPECT_EQ(Enter(gate, log.Call("e")), CallGate::Entry::kStartNow);
}

TEST(CallGateTest, ANewCallDoesNotOvertakeOnesThatWait) {
  CallGate gate({.most_in_flight = 1});
  Log log;
  ASSERT_EQ(Enter(gate, log.Call("a")), CallGate::Entry::kStartNow);
  ASSERT_EQ(Enter(gate, log.Call("b")), CallGate::Entry::kWaiting);
  CallGate::Released released = gate.Leave(kNow);  // b has the place, not yet started
  EXPECT_EQ(Enter(gate, log.Call("c")), CallGate::Entry::kWaiting);
  RunReleased(std::move(released));
  EXPECT_EQ(log.events, std::vector<std::string>{"start b"});
}

TEST(CallGateTest, AFullQueueRefusesAtOnce) {
  CallGate gate({.most_in_flight = 1, .most_waiting = 1});
  Log log;
  ASSERT_EQ(Enter(gate, log.Call("a")), CallGate::Entry::kStartNow);
  ASSERT_EQ(Enter(gate, log.Call("b")), CallGate::Entry::kWaiting);
  EXPECT_EQ(Enter(gate, log.Call("c")), CallGate::Entry::kRefused);
  EXPECT_EQ(gate.waiting(), 1u);
}

TEST(CallGateTest, ACallThatWaitedTooLongIsRefusedAndTheNextStarts) {
  CallGate gate({.most_in_flight = 1, .most_wait = absl::Seconds(10)});
  Log log;
  ASSERT_EQ(Enter(gate, log.Call("a")), CallGate::Entry::kStartNow);
  ASSERT_EQ(Enter(gate, log.Call("old", kNow)), CallGate::Entry::kWaiting);
  ASSERT_EQ(Enter(gate, log.Call("new", kNow + absl::Seconds(9))), CallGate::Entry::kWaiting);
  RunReleased(gate.Leave(kNow + absl::Seconds(11)));
  EXPECT_EQ(log.events, (std::vector<std::string>{"refuse old", "start new"}));
  EXPECT_EQ(gate.in_flight(), 1u);
}

TEST(CallGateTest, TheWaitingAreTakenOutAtTheEnd) {
  CallGate gate({.most_in_flight = 1});
  Log log;
  ASSERT_EQ(Enter(gate, log.Call("a")), CallGate::Entry::kStartNow);
  ASSERT_EQ(Enter(gate, log.Call("b")), CallGate::Entry::kWaiting);
  std::vector<CallGate::Waiting> taken = gate.TakeWaiting();
  ASSERT_EQ(taken.size(), 1u);
  taken[0].refuse();
  EXPECT_EQ(log.events, std::vector<std::string>{"refuse b"});
  EXPECT_EQ(gate.waiting(), 0u);
  // The call in flight ends: nothing is left to start.
  EXPECT_FALSE(gate.Leave(kNow).start.has_value());
}

}  // namespace
}  // namespace relay::gateway
