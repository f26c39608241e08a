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

// One place, and count calls waiting behind the one in flight, all entered at kNow.
void Fill(CallGate& gate, Log& log, int count) {
  ASSERT_EQ(Enter(gate, log.Call("first")), CallGate::Entry::kStartNow);
  for (int i = 0; i < count; ++i) {
    ASSERT_EQ(Enter(gate, log.Call("w" + std::to_string(i))), CallGate::Entry::kWaiting);
  }
}

TEST(CallGateTest, ACallThatCouldNotStartInTimeAtTheMeasuredPaceIsRefusedAtOnce) {
  CallGate gate({.most_in_flight = 1, .most_wait = absl::Seconds(10), .pace_window = 4});
  Log log;
  Fill(gate, log, 13);
  // Calls leave one a second while others wait: the pace is known after four.
  for (int t = 1; t <= 4; ++t) {
    RunReleased(gate.Leave(kNow + absl::Seconds(t)));
  }
  ASSERT_EQ(gate.waiting(), 9u);
  // At one a second (four leaves in the four seconds since the oldest), the tenth in the queue
  // starts within 10 s; the eleventh would not: it hears so now, not in 10 s.
  EXPECT_EQ(Enter(gate, log.Call("tenth", kNow + absl::Seconds(5))), CallGate::Entry::kWaiting);
  EXPECT_EQ(Enter(gate, log.Call("eleventh", kNow + absl::Seconds(5))),
            CallGate::Entry::kRefused);
  EXPECT_EQ(gate.waiting(), 10u);
}

TEST(CallGateTest, ThePaceIsUnknownUntilCallsLeaveWhileOthersWait) {
  CallGate gate({.most_in_flight = 1, .most_wait = absl::Seconds(10), .pace_window = 2});
  Log log;
  // Calls that leave an idle gate, one every 100 s, say nothing of the service's pace.
  for (int t = 3; t > 0; --t) {
    ASSERT_EQ(Enter(gate, log.Call("idle", kNow - absl::Seconds(100 * t))),
              CallGate::Entry::kStartNow);
    RunReleased(gate.Leave(kNow - absl::Seconds(100 * t - 1)));
  }
  Fill(gate, log, 1000);  // a storm: all wait, none refused before the pace is known
  RunReleased(gate.Leave(kNow + absl::Milliseconds(10)));
  EXPECT_EQ(Enter(gate, log.Call("late", kNow + absl::Milliseconds(10))),
            CallGate::Entry::kWaiting);
  RunReleased(gate.Leave(kNow + absl::Milliseconds(20)));
  // Two leaves 10 ms apart, counted to 30 ms: 100 a second, 1,000 in 10 s.
  EXPECT_EQ(Enter(gate, log.Call("1000th", kNow + absl::Milliseconds(30))),
            CallGate::Entry::kWaiting);
  EXPECT_EQ(Enter(gate, log.Call("1001st", kNow + absl::Milliseconds(30))),
            CallGate::Entry::kRefused);
}

TEST(CallGateTest, AQueueThatDrainedForgetsThePace) {
  CallGate gate({.most_in_flight = 1, .most_wait = absl::Seconds(10), .pace_window = 2});
  Log log;
  Fill(gate, log, 2);
  RunReleased(gate.Leave(kNow + absl::Seconds(5)));  // slow: 5 s a call
  RunReleased(gate.Leave(kNow + absl::Seconds(10)));
  ASSERT_EQ(gate.waiting(), 0u);
  // An hour later the service may be another: a new queue waits until it measures again.
  const absl::Time later = kNow + absl::Hours(1);
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(Enter(gate, log.Call("again", later)), CallGate::Entry::kWaiting);
  }
}

TEST(CallGateTest, AServiceThatStopsAnsweringSlowsThePace) {
  CallGate gate({.most_in_flight = 1, .most_wait = absl::Seconds(10), .pace_window = 2});
  Log log;
  Fill(gate, log, 3);
  RunReleased(gate.Leave(kNow + absl::Seconds(1)));
  RunReleased(gate.Leave(kNow + absl::Seconds(2)));  // two a second, then nothing
  ASSERT_EQ(gate.waiting(), 1u);
  // 1 s after the oldest of the two leaves, the second in the queue would start in 1 s.
  EXPECT_EQ(Enter(gate, log.Call("soon", kNow + absl::Seconds(2))), CallGate::Entry::kWaiting);
  // 20 s after it with no call answered since, two leaves in 20 s: the third in the queue
  // would wait 30 s.
  EXPECT_EQ(Enter(gate, log.Call("stalled", kNow + absl::Seconds(21))),
            CallGate::Entry::kRefused);
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
