#include "gateway/net/gathered_posts.h"

#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <gtest/gtest.h>

namespace relay::gateway {
namespace {

TEST(GatheredPostsTest, WithoutAScopePostsGoAtOnceAndRunInTheirOrder) {
  boost::asio::io_context io;
  std::vector<int> ran;
  GatheredPosts::Post(io.get_executor(), [&] { ran.push_back(1); });
  GatheredPosts::Post(io.get_executor(), [&] { ran.push_back(2); });
  // The second joins the first's turn: one handler runs both.
  EXPECT_EQ(io.poll_one(), 1u);
  EXPECT_EQ(ran, (std::vector<int>{1, 2}));
  EXPECT_EQ(io.poll(), 0u);  // and found nothing more
}

TEST(GatheredPostsTest, AScopeSendsOneHandlerPerThreadInOrderWhenItCloses) {
  boost::asio::io_context a;
  boost::asio::io_context b;
  std::vector<std::string> ran;
  {
    GatheredPosts scope;
    GatheredPosts::Post(a.get_executor(), [&] { ran.push_back("a1"); });
    GatheredPosts::Post(b.get_executor(), [&] { ran.push_back("b1"); });
    GatheredPosts::Post(a.get_executor(), [&] { ran.push_back("a2"); });
    // Nothing leaves before the batch is done.
    EXPECT_EQ(a.poll(), 0u);
    EXPECT_EQ(b.poll(), 0u);
    a.restart();  // a context that ran out of work stops until restarted
    b.restart();
  }
  // One handler runs all of a thread's work, in the order it was posted.
  EXPECT_EQ(a.poll_one(), 1u);
  EXPECT_EQ(ran, (std::vector<std::string>{"a1", "a2"}));
  EXPECT_EQ(a.poll(), 0u);
  EXPECT_EQ(b.poll_one(), 1u);
  EXPECT_EQ(ran, (std::vector<std::string>{"a1", "a2", "b1"}));
}

TEST(GatheredPostsTest, AfterTheScopePostsGoAtOnceAgain) {
  boost::asio::io_context io;
  int ran = 0;
  { GatheredPosts scope; }
  GatheredPosts::Post(io.get_executor(), [&] { ++ran; });
  EXPECT_EQ(io.poll(), 1u);
  EXPECT_EQ(ran, 1);
}

TEST(GatheredPostsTest, AnInnerScopeSendsItsOwnWorkWhenItCloses) {
  boost::asio::io_context io;
  std::vector<int> ran;
  {
    GatheredPosts outer;
    GatheredPosts::Post(io.get_executor(), [&] { ran.push_back(1); });
    {
      GatheredPosts inner;
      GatheredPosts::Post(io.get_executor(), [&] { ran.push_back(2); });
    }
    EXPECT_EQ(io.poll(), 1u);  // the inner scope's work only
    EXPECT_EQ(ran, (std::vector<int>{2}));
    io.restart();
  }
  EXPECT_EQ(io.poll(), 1u);
  EXPECT_EQ(ran, (std::vector<int>{2, 1}));
}

TEST(GatheredPostsTest, AnotherThreadsPostsAreNotHeldByThisThreadsScope) {
  boost::asio::io_context io;
  int ran = 0;
  GatheredPosts scope;
  std::thread other([&] { GatheredPosts::Post(io.get_executor(), [&] { ++ran; }); });
  other.join();
  EXPECT_EQ(io.poll(), 1u);
  EXPECT_EQ(ran, 1);
}

TEST(GatheredPostsTest, ALongBatchRunsInSlicesWithTheThreadsOtherWorkBetween) {
  boost::asio::io_context io;
  constexpr size_t kItems = 2 * GatheredPosts::kSlice + 44;  // a link back: an item per tab
  std::vector<size_t> ran;
  {
    GatheredPosts scope;
    for (size_t i = 0; i < kItems; ++i) {
      GatheredPosts::Post(io.get_executor(), [&ran, i] { ran.push_back(i); });
    }
  }
  // A socket's read that completes meanwhile: a handler of the thread's own.
  bool read = false;
  boost::asio::post(io, [&] { read = true; });

  EXPECT_EQ(io.poll_one(), 1u);
  EXPECT_EQ(ran.size(), GatheredPosts::kSlice);
  EXPECT_FALSE(read);
  EXPECT_EQ(io.poll_one(), 1u);
  EXPECT_TRUE(read);  // it did not wait for the whole batch
  EXPECT_EQ(ran.size(), GatheredPosts::kSlice);
  io.poll();
  ASSERT_EQ(ran.size(), kItems);
  for (size_t i = 0; i < kItems; ++i) {
    EXPECT_EQ(ran[i], i);
  }
}

TEST(GatheredPostsTest, WorkHandedOverDuringALongBatchRunsAfterIt) {
  boost::asio::io_context io;
  std::vector<std::string> ran;
  {
    GatheredPosts scope;
    for (size_t i = 0; i < GatheredPosts::kSlice + 1; ++i) {
      GatheredPosts::Post(io.get_executor(), [&] { ran.push_back("link up"); });
    }
  }
  EXPECT_EQ(io.poll_one(), 1u);  // one slice: one item of the batch is left
  // A command for a tab of that batch, handed over now, must not overtake the
  // batch's item for the same tab.
  GatheredPosts::Post(io.get_executor(), [&] { ran.push_back("command"); });
  { GatheredPosts next_batch; GatheredPosts::Post(io.get_executor(), [&] { ran.push_back("batch"); }); }
  io.poll();
  ASSERT_EQ(ran.size(), GatheredPosts::kSlice + 3);
  EXPECT_EQ(ran[GatheredPosts::kSlice], "link up");
  EXPECT_EQ(ran[GatheredPosts::kSlice + 1], "command");
  EXPECT_EQ(ran[GatheredPosts::kSlice + 2], "batch");
}

TEST(GatheredPostsTest, PostNowGoesAtOnceInsideAScopeAheadOfWhatFollows) {
  boost::asio::io_context io;
  std::vector<std::string> ran;
  {
    GatheredPosts batch;
    GatheredPosts::Post(io.get_executor(), [&] { ran.push_back("gathered"); });
    // A call's event: at once, while the batch is still open...
    GatheredPosts::PostNow(io.get_executor(), [&] { ran.push_back("event"); });
    // ...so that the call's end, handed over from another thread's cancel
    // before the batch is done, comes after it.
    std::thread cancel([&] { GatheredPosts::Post(io.get_executor(), [&] { ran.push_back("end"); }); });
    cancel.join();
  }
  io.poll();
  EXPECT_EQ(ran, (std::vector<std::string>{"event", "end", "gathered"}));
}

// A fan-out of n visits on io's thread, each noted as label.
void FanOut(boost::asio::io_context& io, size_t n, std::vector<std::string>& ran,
            std::string label) {
  GatheredPosts::PostSteps(io.get_executor(), [&ran, label, left = n]() mutable {
    ran.push_back(label);
    return --left == 0;
  });
}

TEST(GatheredPostsTest, ACallsWorkOvertakesAFanOutThatWaits) {
  boost::asio::io_context io;
  std::vector<std::string> ran;
  FanOut(io, 3 * GatheredPosts::kSlice, ran, "re-announce");
  EXPECT_EQ(io.poll_one(), 1u);  // the first slice of the fan-out
  ASSERT_EQ(ran.size(), GatheredPosts::kSlice);
  // A call delivered now runs in the next turn, ahead of the fan-out's rest.
  GatheredPosts::Post(io.get_executor(), [&] { ran.push_back("deliver"); });
  EXPECT_EQ(io.poll_one(), 1u);
  ASSERT_EQ(ran.size(), 2 * GatheredPosts::kSlice);
  EXPECT_EQ(ran[GatheredPosts::kSlice], "deliver");
  io.poll();
  EXPECT_EQ(ran.size(), 3 * GatheredPosts::kSlice + 1);
  EXPECT_EQ(ran.back(), "re-announce");
}

TEST(GatheredPostsTest, ALinksEndStaysAheadOfTheNextLinksCallsWhileReannouncementsWait) {
  // A shard's link ends twice while the first return's re-announcements
  // still wait: the second end's item must run before a call that a third
  // link delivers, or it would cancel that call at its tab.
  boost::asio::io_context io;
  std::vector<std::string> ran;
  { GatheredPosts link_a_ends; GatheredPosts::Post(io.get_executor(), [&] { ran.push_back("a ends"); }); }
  FanOut(io, 2 * GatheredPosts::kSlice, ran, "re-announce");
  { GatheredPosts link_b_ends; GatheredPosts::Post(io.get_executor(), [&] { ran.push_back("b ends"); }); }
  GatheredPosts::Post(io.get_executor(), [&] { ran.push_back("c delivers"); });
  io.poll();
  ASSERT_GE(ran.size(), 3u);
  EXPECT_EQ(ran[0], "a ends");
  EXPECT_EQ(ran[1], "b ends");
  EXPECT_EQ(ran[2], "c delivers");
}

TEST(GatheredPostsTest, FanOutsKeepTheirOrderAmongThemselves) {
  boost::asio::io_context io;
  std::vector<std::string> ran;
  constexpr size_t kTabs = GatheredPosts::kSlice + 5;
  FanOut(io, kTabs, ran, "shard 0");
  FanOut(io, kTabs, ran, "shard 1");
  io.poll();
  ASSERT_EQ(ran.size(), 2 * kTabs);
  for (size_t i = 0; i < kTabs; ++i) {
    EXPECT_EQ(ran[i], "shard 0") << i;
    EXPECT_EQ(ran[kTabs + i], "shard 1") << i;
  }
}

TEST(GatheredPostsTest, AFanOutGoesOnWhileCallsKeepComing) {
  boost::asio::io_context io;
  std::vector<std::string> ran;
  size_t calls = 0;
  FanOut(io, 100, ran, "re-announce");
  // A load that hands a thread more than a slice of calls' work every turn.
  for (size_t turn = 1; turn <= 3; ++turn) {
    for (size_t i = 0; i < 2 * GatheredPosts::kSlice; ++i) {
      GatheredPosts::Post(io.get_executor(), [&] { ++calls; });
    }
    EXPECT_EQ(io.poll_one(), 1u);
    EXPECT_EQ(ran.size(), turn * GatheredPosts::kFanOutFloor);
  }
  io.poll();
  EXPECT_EQ(ran.size(), 100u);
  EXPECT_EQ(calls, 6 * GatheredPosts::kSlice);
}

// A session of a thread of its own, for FanOut.
struct FakeSession {
  boost::asio::io_context& io;
  int visits = 0;
  boost::asio::any_io_executor executor() { return io.get_executor(); }
};

TEST(GatheredPostsTest, AFanOutVisitsEachSessionOnItsOwnThreadAndLetsItGo) {
  boost::asio::io_context a;
  boost::asio::io_context b;
  std::vector<std::shared_ptr<FakeSession>> sessions;
  for (int i = 0; i < 5; ++i) {
    sessions.push_back(std::make_shared<FakeSession>(FakeSession{i % 2 == 0 ? a : b}));
  }
  std::weak_ptr<FakeSession> first = sessions[0];
  std::vector<std::shared_ptr<FakeSession>> watched = sessions;
  std::vector<std::pair<FakeSession*, boost::asio::io_context*>> seen;
  boost::asio::io_context* running = nullptr;
  GatheredPosts::FanOut(std::move(sessions), [&](FakeSession& session) {
    ++session.visits;
    seen.emplace_back(&session, running);
  });
  watched[0].reset();
  EXPECT_FALSE(first.expired());  // held until its visit
  running = &a;
  EXPECT_EQ(a.poll(), 1u);  // one handler: its three sessions in a turn
  running = &b;
  EXPECT_EQ(b.poll(), 1u);
  ASSERT_EQ(seen.size(), 5u);
  for (auto [session, thread] : seen) {
    EXPECT_EQ(&session->io, thread);  // each on its own thread
  }
  for (size_t i = 1; i < watched.size(); ++i) {
    EXPECT_EQ(watched[i]->visits, 1) << i;
  }
  EXPECT_TRUE(first.expired());  // and let go
}

TEST(GatheredPostsTest, AFanOutLetsEachSessionGoOnceVisitedAndAllWithItsThread) {
  auto io = std::make_unique<boost::asio::io_context>();
  constexpr size_t kSessions = 2 * GatheredPosts::kSlice + 3;
  std::vector<std::shared_ptr<FakeSession>> sessions;
  std::vector<std::weak_ptr<FakeSession>> watched;
  for (size_t i = 0; i < kSessions; ++i) {
    sessions.push_back(std::make_shared<FakeSession>(FakeSession{*io}));
    watched.push_back(sessions.back());
  }
  GatheredPosts::FanOut(std::move(sessions), [](FakeSession& session) { ++session.visits; });
  EXPECT_EQ(io->poll_one(), 1u);  // a turn: one slice of visits
  for (size_t i = 0; i < kSessions; ++i) {
    // The visited ones are let go now, not when the fan-out ends.
    EXPECT_EQ(watched[i].expired(), i < GatheredPosts::kSlice) << i;
  }
  io.reset();  // the thread goes with a fan-out half done: its sessions with it
  for (size_t i = 0; i < kSessions; ++i) {
    EXPECT_TRUE(watched[i].expired()) << i;
  }
}

TEST(GatheredPostsTest, AnItemsCapturesGoOnceItRan) {
  boost::asio::io_context io;
  auto session = std::make_shared<int>(7);
  std::weak_ptr<int> watch = session;
  {
    GatheredPosts batch;
    GatheredPosts::Post(io.get_executor(), [held = std::move(session)] {});
    for (size_t i = 0; i < GatheredPosts::kSlice; ++i) {
      GatheredPosts::Post(io.get_executor(), [] {});
    }
  }
  EXPECT_EQ(io.poll_one(), 1u);  // a slice: the batch's last item is still to run
  EXPECT_TRUE(watch.expired());  // but the first's session is not held with it
}

TEST(GatheredPostsTest, ManyThreadsHandingOverKeepEachOnesOrder) {
  boost::asio::io_context io;
  auto guard = boost::asio::make_work_guard(io);
  std::thread runner([&] { io.run(); });
  constexpr int kThreads = 4;
  constexpr int kEach = 5000;
  std::vector<std::vector<int>> seen(kThreads);  // touched on io's thread alone
  std::vector<std::thread> senders;
  for (int t = 0; t < kThreads; ++t) {
    senders.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        if (i % 7 == 0) {
          GatheredPosts scope;  // some in batches, some alone
          GatheredPosts::Post(io.get_executor(), [&, t, i] { seen[t].push_back(i); });
          GatheredPosts::Post(io.get_executor(), [&, t, i] { seen[t].push_back(i + 1); });
          ++i;
        } else {
          GatheredPosts::Post(io.get_executor(), [&, t, i] { seen[t].push_back(i); });
        }
      }
    });
  }
  for (auto& sender : senders) {
    sender.join();
  }
  std::promise<void> drained;
  GatheredPosts::Post(io.get_executor(), [&] { drained.set_value(); });
  drained.get_future().wait();
  guard.reset();
  runner.join();
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(seen[t].size(), static_cast<size_t>(kEach)) << "thread " << t;
    for (int i = 0; i < kEach; ++i) {
      ASSERT_EQ(seen[t][i], i) << "thread " << t;
    }
  }
}

}  // namespace
}  // namespace relay::gateway
