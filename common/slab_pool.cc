#include "common/slab_pool.h"

#include <sys/mman.h>

#include <atomic>
#include <cassert>
#include <cstdlib>
#include <new>

#ifdef RELAY_SLAB_SANITIZED
#include <sanitizer/asan_interface.h>
#include <sanitizer/lsan_interface.h>
#define RELAY_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define RELAY_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
// The leak checker scans the heap, not memory mapped by hand: the blocks are roots, so that
// what a live session points to is not taken for a leak.
#define RELAY_ROOT(p, n) __lsan_register_root_region(p, n)
#define RELAY_UNROOT(p, n) __lsan_unregister_root_region(p, n)
#else
#define RELAY_POISON(p, n) ((void)(p), (void)(n))
#define RELAY_UNPOISON(p, n) ((void)(p), (void)(n))
#define RELAY_ROOT(p, n) ((void)(p), (void)(n))
#define RELAY_UNROOT(p, n) ((void)(p), (void)(n))
#endif

namespace relay::common {

// At the start of each block.
struct SlabPool::Block {
  Block* prev = nullptr;
  Block* next = nullptr;
  void* free = nullptr;  // given-back slots, each holding the next one's address
  size_t fresh = 0;      // slots [fresh, slots_per_block_) were never handed out
  size_t live = 0;
  bool listed = false;  // in partial_
};

namespace {

constexpr size_t kAlign = 16;
constexpr size_t RoundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }
constexpr size_t kHeaderBytes = 64;  // a Block, rounded to a cache line

std::atomic<size_t> live_in_all_pools{0};

}  // namespace

SlabPool::SlabPool(size_t slot_bytes)
    : slot_bytes_(RoundUp(slot_bytes < sizeof(void*) ? sizeof(void*) : slot_bytes, kAlign)),
      slots_per_block_((kBlockBytes - kHeaderBytes) / slot_bytes_) {
  static_assert(sizeof(Block) <= kHeaderBytes);
  if (slots_per_block_ == 0) {
    std::abort();  // a slot larger than a block: a programming error (SlabAllocator asserts it)
  }
}

SlabPool::~SlabPool() {
  assert(live_ == 0);
  while (partial_ != nullptr) {
    Block* block = partial_;
    Unlink(block);
    UnmapBlock(block);
  }
}

char* SlabPool::Slot(Block* block, size_t index) const {
  return reinterpret_cast<char*>(block) + kHeaderBytes + index * slot_bytes_;
}

bool SlabPool::Full(const Block* block) const {
  return block->free == nullptr && block->fresh == slots_per_block_;
}

SlabPool::Block* SlabPool::MapBlock() {
  // Twice the size, then the ends cut off: a block aligned to its size.
  void* raw = mmap(nullptr, 2 * kBlockBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    throw std::bad_alloc();
  }
  const uintptr_t begin = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t start = RoundUp(begin, kBlockBytes);
  if (start > begin) {
    munmap(raw, start - begin);
  }
  const uintptr_t end = begin + 2 * kBlockBytes;
  if (end > start + kBlockBytes) {
    munmap(reinterpret_cast<void*>(start + kBlockBytes), end - (start + kBlockBytes));
  }
  ++blocks_;
  Block* block = new (reinterpret_cast<void*>(start)) Block();
  RELAY_ROOT(block, kBlockBytes);
  RELAY_POISON(Slot(block, 0), slots_per_block_ * slot_bytes_);
  return block;
}

void SlabPool::UnmapBlock(Block* block) {
  RELAY_UNPOISON(Slot(block, 0), slots_per_block_ * slot_bytes_);
  block->~Block();
  RELAY_UNROOT(block, kBlockBytes);
  munmap(block, kBlockBytes);
  --blocks_;
}

void SlabPool::PushFront(Block* block) {
  block->prev = nullptr;
  block->next = partial_;
  if (partial_ != nullptr) {
    partial_->prev = block;
  }
  partial_ = block;
  block->listed = true;
}

void SlabPool::Unlink(Block* block) {
  if (block->prev != nullptr) {
    block->prev->next = block->next;
  } else {
    partial_ = block->next;
  }
  if (block->next != nullptr) {
    block->next->prev = block->prev;
  }
  block->prev = block->next = nullptr;
  block->listed = false;
}

void* SlabPool::Allocate() {
  std::lock_guard<std::mutex> lock(mu_);
  if (partial_ == nullptr) {
    PushFront(MapBlock());
  }
  Block* block = partial_;
  char* slot;
  if (block->free != nullptr) {
    slot = static_cast<char*>(block->free);
    RELAY_UNPOISON(slot, slot_bytes_);
    block->free = *reinterpret_cast<void**>(slot);
  } else {
    slot = Slot(block, block->fresh++);
    RELAY_UNPOISON(slot, slot_bytes_);
  }
  ++block->live;
  ++live_;
  live_in_all_pools.fetch_add(1, std::memory_order_relaxed);
  if (Full(block)) {
    Unlink(block);
  }
  return slot;
}

void SlabPool::Deallocate(void* slot) {
  Block* block =
      reinterpret_cast<Block*>(reinterpret_cast<uintptr_t>(slot) & ~(uintptr_t{kBlockBytes} - 1));
  std::lock_guard<std::mutex> lock(mu_);
  *static_cast<void**>(slot) = block->free;
  block->free = slot;
  RELAY_POISON(slot, slot_bytes_);
  --block->live;
  --live_;
  live_in_all_pools.fetch_sub(1, std::memory_order_relaxed);
  if (!block->listed) {
    PushFront(block);  // it was full
  }
  // An empty block goes back to the system, unless it is the only one with room: then the next
  // connection would map a new one at once.
  if (block->live == 0 && (block->prev != nullptr || block->next != nullptr)) {
    Unlink(block);
    UnmapBlock(block);
  }
}

size_t SlabPool::LiveInAllPools() { return live_in_all_pools.load(std::memory_order_relaxed); }

size_t SlabPool::blocks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return blocks_;
}

size_t SlabPool::live() const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_;
}

}  // namespace relay::common
