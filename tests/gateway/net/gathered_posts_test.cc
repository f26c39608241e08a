#include "gateway/net/gathered_posts.h"

#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

namespace relay::gateway {
namespace {

TEST(GatheredPostsTest, WithoutAScopeEachPostIsAHandlerOfItsOwn) {
  boost::asio::io_context io;
  std::vector<int> ran;
  GatheredPosts::Post(io.get_executor(), [&] { ran.push_back(1); });
  GatheredPosts::Post(io.get_executor(), [&] { ran.push_back(2); });
  EXPECT_EQ(io.poll_one(), 1u);
  EXPECT_EQ(ran, (std::vector<int>{1}));
  io.poll();
  EXPECT_EQ(ran, (std::vector<int>{1, 2}));
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

}  // namespace
}  // namespace relay::gateway
