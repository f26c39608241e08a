#include "common/heap_trimmer.h"

#include <cstring>
#include <memory>
#include <vector>

#include "gtest/gtest.h"

namespace relay::common {
namespace {

constexpr size_t kMiB = 1 << 20;

TEST(TrimPolicy, TrimsOnceFreeMemoryGrewByTheThreshold) {
  TrimPolicy policy(16 * kMiB, 32);
  EXPECT_FALSE(policy.ShouldTrim(2 * kMiB));   // the first reading sets the low point
  EXPECT_FALSE(policy.ShouldTrim(17 * kMiB));  // grew by 15
  EXPECT_TRUE(policy.ShouldTrim(18 * kMiB));   // grew by 16: a burst was freed
  // Trimmed: the free chunks stay free in the books, so no trim again at the same level.
  EXPECT_FALSE(policy.ShouldTrim(18 * kMiB));
  EXPECT_FALSE(policy.ShouldTrim(30 * kMiB));
}

TEST(TrimPolicy, CountsGrowthFromTheLowPoint) {
  TrimPolicy policy(16 * kMiB, 32);
  EXPECT_FALSE(policy.ShouldTrim(40 * kMiB));
  // The free memory is used again (connections arrive), then freed again: resident again.
  EXPECT_FALSE(policy.ShouldTrim(10 * kMiB));
  EXPECT_FALSE(policy.ShouldTrim(25 * kMiB));
  EXPECT_TRUE(policy.ShouldTrim(26 * kMiB));
}

// The ticks on which a policy looks at the free memory, over `ticks` ticks with resident
// memory steady at 100 MiB and nothing to trim.
std::vector<int> LooksWhileSteady(TrimPolicy& policy, int ticks) {
  std::vector<int> looked;
  for (int tick = 1; tick <= ticks; ++tick) {
    if (policy.ShouldLook(100 * kMiB)) {
      looked.push_back(tick);
      EXPECT_FALSE(policy.ShouldTrim(1 * kMiB));
    }
  }
  return looked;
}

TEST(TrimPolicy, LooksHalfAsOftenWhileNothingChanges) {
  TrimPolicy policy(4 * kMiB, 8);
  // Reading the free memory walks the heap under its lock: a steady process is read ever
  // more rarely, down to once in 8 ticks here.
  EXPECT_EQ(LooksWhileSteady(policy, 40), (std::vector<int>{1, 3, 7, 15, 23, 31, 39}));
}

TEST(TrimPolicy, LooksOnEveryTickWhileResidentMemoryMoves) {
  TrimPolicy policy(4 * kMiB, 8);
  LooksWhileSteady(policy, 40);
  // A storm arrives: resident memory grows by the threshold or more from tick to tick.
  EXPECT_TRUE(policy.ShouldLook(104 * kMiB));
  EXPECT_FALSE(policy.ShouldTrim(1 * kMiB));
  EXPECT_TRUE(policy.ShouldLook(110 * kMiB));
  EXPECT_FALSE(policy.ShouldTrim(1 * kMiB));
  // Less than the threshold is no move.
  EXPECT_FALSE(policy.ShouldLook(112 * kMiB));
  // The storm ends: what it held is freed, resident memory stays. The next looks find it.
  EXPECT_TRUE(policy.ShouldLook(112 * kMiB));
  EXPECT_TRUE(policy.ShouldTrim(30 * kMiB));
  // Trimmed: resident memory falls, and the policy looks on the next tick again.
  EXPECT_TRUE(policy.ShouldLook(90 * kMiB));
}

TEST(TrimPolicy, LooksOnTheNextTickAfterATrim) {
  TrimPolicy policy(4 * kMiB, 8);
  ASSERT_EQ(LooksWhileSteady(policy, 39).back(), 39);
  // A look once in 8 ticks finds a burst freed: trim, then look on every tick again (more
  // may be on its way out), backing off as before.
  for (int tick = 0; tick < 7; ++tick) {
    EXPECT_FALSE(policy.ShouldLook(100 * kMiB));
  }
  EXPECT_TRUE(policy.ShouldLook(100 * kMiB));
  EXPECT_TRUE(policy.ShouldTrim(20 * kMiB));
  EXPECT_TRUE(policy.ShouldLook(100 * kMiB));
  EXPECT_FALSE(policy.ShouldTrim(20 * kMiB));
  EXPECT_FALSE(policy.ShouldLook(100 * kMiB));
  EXPECT_TRUE(policy.ShouldLook(100 * kMiB));
}

TEST(TrimPolicy, AFallOfResidentMemoryIsAMoveToo) {
  TrimPolicy policy(4 * kMiB, 8);
  ASSERT_EQ(LooksWhileSteady(policy, 39).back(), 39);
  // Less than the threshold, either way, is no move: the policy keeps its backed-off pace.
  EXPECT_FALSE(policy.ShouldLook(97 * kMiB));
  EXPECT_FALSE(policy.ShouldLook(103 * kMiB));
  // A fall by the threshold (memory given back by a large free) is.
  EXPECT_TRUE(policy.ShouldLook(96 * kMiB));
}

TEST(TrimPolicy, SlowDriftCountsFromTheLastLook) {
  TrimPolicy policy(4 * kMiB, 8);
  ASSERT_EQ(LooksWhileSteady(policy, 39).back(), 39);
  // 1 MiB a tick: the fourth tick has moved 4 MiB since the look at tick 39.
  EXPECT_FALSE(policy.ShouldLook(101 * kMiB));
  EXPECT_FALSE(policy.ShouldLook(102 * kMiB));
  EXPECT_FALSE(policy.ShouldLook(103 * kMiB));
  EXPECT_TRUE(policy.ShouldLook(104 * kMiB));
}

// What a burst leaves: many small blocks freed between a few that stay. The trim gives the
// pages between the survivors back.
TEST(TrimHeap, GivesBackThePagesABurstFreed) {
  constexpr size_t kBlock = 4096;
  constexpr size_t kBlocks = 64 * kMiB / kBlock;
  std::vector<std::unique_ptr<char[]>> blocks(kBlocks);
  for (auto& block : blocks) {
    block.reset(new char[kBlock]);
    std::memset(block.get(), 1, kBlock);  // resident
  }
  for (size_t i = 0; i < kBlocks; ++i) {
    if (i % 16 != 0) {
      blocks[i].reset();  // one block in 16 stays, as the connections that stayed do
    }
  }
  EXPECT_GT(AllocatorFreeBytes(), 48 * kMiB);
  int64_t released = TrimHeap();
  EXPECT_GT(released, static_cast<int64_t>(32 * kMiB)) << "released " << released;
}

}  // namespace
}  // namespace relay::common
