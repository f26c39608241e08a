#include "common/slab_pool.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace relay::common {
namespace {

uintptr_t BlockOf(void* p) {
  return reinterpret_cast<uintptr_t>(p) & ~(uintptr_t{SlabPool::kBlockBytes} - 1);
}

TEST(SlabPool, SlotsAreDistinctAlignedAndWritable) {
  SlabPool pool(1000);
  EXPECT_EQ(pool.slot_bytes(), 1008u);
  std::vector<void*> slots;
  std::set<uintptr_t> blocks;
  for (size_t i = 0; i < 2 * pool.slots_per_block() + 1; ++i) {
    void* p = pool.Allocate();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 16, 0u);
    std::memset(p, 0xab, pool.slot_bytes());  // whole slot ours: no overlap with its neighbours
    slots.push_back(p);
    blocks.insert(BlockOf(p));
  }
  EXPECT_EQ(std::set<void*>(slots.begin(), slots.end()).size(), slots.size());
  EXPECT_EQ(blocks.size(), 3u);
  EXPECT_EQ(pool.blocks(), 3u);
  EXPECT_EQ(pool.live(), slots.size());
  for (void* p : slots) pool.Deallocate(p);
  EXPECT_EQ(pool.live(), 0u);
}

TEST(SlabPool, AGivenBackSlotIsTakenAgainBeforeANewBlock) {
  SlabPool pool(512);
  std::vector<void*> slots;
  for (size_t i = 0; i < pool.slots_per_block(); ++i) slots.push_back(pool.Allocate());
  ASSERT_EQ(pool.blocks(), 1u);  // full
  void* freed = slots[7];
  pool.Deallocate(freed);
  EXPECT_EQ(pool.Allocate(), freed);
  EXPECT_EQ(pool.blocks(), 1u);
  slots.push_back(pool.Allocate());  // now a second block
  EXPECT_EQ(pool.blocks(), 2u);
  for (void* p : slots) pool.Deallocate(p);
}

TEST(SlabPool, EmptiedBlocksGoBackToTheSystemButOneIsKept) {
  // What a storm of connections leaves: many blocks, then all but a few slots given back.
  SlabPool pool(1024);
  std::vector<void*> slots;
  for (size_t i = 0; i < 5 * pool.slots_per_block(); ++i) slots.push_back(pool.Allocate());
  ASSERT_EQ(pool.blocks(), 5u);
  // The ones that stay are all in the last block.
  std::vector<void*> stay(slots.end() - 3, slots.end());
  slots.resize(slots.size() - 3);
  for (void* p : slots) pool.Deallocate(p);
  EXPECT_EQ(pool.blocks(), 2u);  // the one that holds the three, and one empty kept for the next
  EXPECT_EQ(pool.live(), 3u);
  for (void* p : stay) pool.Deallocate(p);
  EXPECT_EQ(pool.blocks(), 1u);
  EXPECT_EQ(pool.live(), 0u);
}

struct Counted : std::enable_shared_from_this<Counted> {
  explicit Counted(int* destroyed) : destroyed(destroyed) {}
  ~Counted() { ++*destroyed; }
  int* destroyed;
  char payload[300] = {};
};

TEST(SlabPool, MakeSlabSharedIsAShareablePointerWhoseObjectDiesWithTheLastOwner) {
  int destroyed = 0;
  std::weak_ptr<Counted> weak;
  {
    std::shared_ptr<Counted> p = MakeSlabShared<Counted>(&destroyed);
    std::shared_ptr<Counted> again = p->shared_from_this();
    EXPECT_EQ(again.get(), p.get());
    weak = p;
    EXPECT_EQ(destroyed, 0);
  }
  EXPECT_EQ(destroyed, 1);
  EXPECT_TRUE(weak.expired());
}

TEST(SlabPool, MakeSlabSharedTakesASlotThatTheLastWeakPointerGivesBack) {
#ifdef RELAY_SLAB_SANITIZED
  GTEST_SKIP() << "on the heap under AddressSanitizer";
#endif
  const size_t before = SlabPool::LiveInAllPools();
  int destroyed = 0;
  std::shared_ptr<Counted> p = MakeSlabShared<Counted>(&destroyed);
  EXPECT_EQ(SlabPool::LiveInAllPools(), before + 1);
  std::weak_ptr<Counted> weak = p;
  p.reset();
  EXPECT_EQ(destroyed, 1);
  EXPECT_EQ(SlabPool::LiveInAllPools(), before + 1);  // the counts live in the slot too
  weak.reset();
  EXPECT_EQ(SlabPool::LiveInAllPools(), before);
}

TEST(SlabPool, TheAllocatorTakesOneObjectFromItsTypesPool) {
  SlabAllocator<Counted> alloc;
  const size_t before = SlabPoolFor<Counted>().live();
  Counted* one = alloc.allocate(1);
  EXPECT_EQ(SlabPoolFor<Counted>().live(), before + 1);
  Counted* many = alloc.allocate(3);  // arrays go to the heap
  EXPECT_EQ(SlabPoolFor<Counted>().live(), before + 1);
  alloc.deallocate(many, 3);
  alloc.deallocate(one, 1);
  EXPECT_EQ(SlabPoolFor<Counted>().live(), before);
}

#ifdef RELAY_SLAB_SANITIZED
// What an object in a slot points to is not a leak: the leak checker scans the blocks.
std::unique_ptr<int>* held_at_exit = nullptr;
TEST(SlabPool, WhatALiveSlotPointsToIsNotALeak) {
  void* slot = SlabPoolFor<std::unique_ptr<int>>().Allocate();
  held_at_exit = new (slot) std::unique_ptr<int>(new int(42));
  // Not given back: the leak check at exit (detect_leaks=1) must find the int through the block.
  held_at_exit = nullptr;
}

TEST(SlabPoolDeathTest, AUseAfterFreeIsReportedUnderAddressSanitizer) {
  SlabPool pool(64);
  char* p = static_cast<char*>(pool.Allocate());
  pool.Deallocate(p);
  EXPECT_DEATH({ p[20] = 1; }, "use-after-poison");
}
#endif

}  // namespace
}  // namespace relay::common
