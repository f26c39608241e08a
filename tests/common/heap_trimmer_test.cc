#include "common/heap_trimmer.h"

#include <cstring>
#include <memory>
#include <vector>

#include "gtest/gtest.h"

namespace relay::common {
namespace {

constexpr size_t kMiB = 1 << 20;

TEST(TrimPolicy, TrimsOnceFreeMemoryGrewByTheThreshold) {
  TrimPolicy policy(16 * kMiB);
  EXPECT_FALSE(policy.ShouldTrim(2 * kMiB));   // the first reading sets the low point
  EXPECT_FALSE(policy.ShouldTrim(17 * kMiB));  // grew by 15
  EXPECT_TRUE(policy.ShouldTrim(18 * kMiB));   // grew by 16: a burst was freed
  // Trimmed: the free chunks stay free in the books, so no trim again at the same level.
  EXPECT_FALSE(policy.ShouldTrim(18 * kMiB));
  EXPECT_FALSE(policy.ShouldTrim(30 * kMiB));
}

TEST(TrimPolicy, CountsGrowthFromTheLowPoint) {
  TrimPolicy policy(16 * kMiB);
  EXPECT_FALSE(policy.ShouldTrim(40 * kMiB));
  // The free memory is used again (connections arrive), then freed again: resident again.
  EXPECT_FALSE(policy.ShouldTrim(10 * kMiB));
  EXPECT_FALSE(policy.ShouldTrim(25 * kMiB));
  EXPECT_TRUE(policy.ShouldTrim(26 * kMiB));
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
