#include "common/fifo.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace relay::common {
namespace {

TEST(Fifo, FirstInFirstOut) {
  Fifo<std::string> q;
  EXPECT_TRUE(q.empty());
  q.push_back("a");
  q.emplace_back("b");
  q.push_back("c");
  ASSERT_EQ(q.size(), 3u);
  EXPECT_EQ(q[1], "b");
  EXPECT_EQ(q.front(), "a");
  q.pop_front();
  EXPECT_EQ(q.front(), "b");
  std::string seen;
  for (const std::string& s : q) seen += s;
  EXPECT_EQ(seen, "bc");
  q.pop_front();
  q.pop_front();
  EXPECT_TRUE(q.empty());
  q.push_back("d");
  EXPECT_EQ(q.front(), "d");
  EXPECT_EQ(q.size(), 1u);
}

TEST(Fifo, ReleasesWhatItHeldWhenPopped) {
  Fifo<std::shared_ptr<int>> q;
  auto held = std::make_shared<int>(1);
  q.push_back(held);
  q.push_back(std::make_shared<int>(2));
  EXPECT_EQ(held.use_count(), 2);
  q.pop_front();
  EXPECT_EQ(held.use_count(), 1);  // not kept until the queue drains
}

TEST(Fifo, StaysBoundedWhenItNeverDrains) {
  Fifo<int> q;
  q.push_back(-1);
  for (int i = 0; i < 100000; ++i) {
    q.push_back(i);
    q.pop_front();
    ASSERT_EQ(q.size(), 1u);
    ASSERT_EQ(q.front(), i);
    ASSERT_LE(q.capacity(), 128u);
  }
}

TEST(Fifo, HoldsNothingOnceDrained) {
  Fifo<std::string> q;
  EXPECT_EQ(q.capacity(), 0u);
  for (int i = 0; i < 100; ++i) q.push_back("x");
  while (!q.empty()) q.pop_front();
  EXPECT_EQ(q.capacity(), 0u);
  q.push_back("y");
  q.pop_front();
  EXPECT_LE(q.capacity(), Fifo<std::string>::kKeptCapacity);
}

TEST(Fifo, KeepsOrderAcrossCompaction) {
  Fifo<int> q;
  int next_in = 0, next_out = 0;
  for (int round = 0; round < 200; ++round) {
    for (int k = 0; k < 7; ++k) q.push_back(next_in++);
    for (int k = 0; k < 5; ++k) {
      ASSERT_EQ(q.front(), next_out++);
      q.pop_front();
    }
  }
  ASSERT_EQ(q.size(), static_cast<size_t>(next_in - next_out));
  for (size_t i = 0; i < q.size(); ++i) ASSERT_EQ(q[i], next_out + static_cast<int>(i));
}

}  // namespace
}  // namespace relay::common
