#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>

// Under AddressSanitizer the sessions stay on the heap (MakeSlabShared below): there ASan keeps
// freed memory in quarantine and puts redzones between objects, and its leak checker follows
// them, which a pool of our own would hide. The pool itself is tested under it.
#if defined(__SANITIZE_ADDRESS__)
#define RELAY_SLAB_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RELAY_SLAB_SANITIZED 1
#endif
#endif

namespace relay::common {

// Slots of one size for the objects a gateway holds one of per connection (its sessions),
// carved from 64 KiB blocks of their own instead of from malloc's heap.
//
// Why: when thousands of connections arrive at once, malloc's heap interleaves what each holds
// only while it waits (its HTTP session) with what stays (its tab's or stream's session). What
// the storm frees then shares pages with what stays, and those pages stay resident whatever the
// heap trimmer does (docs/decisions.md, "Sessions in blocks of their own"). In blocks of their
// own the sessions that stay are packed together, and a block the storm emptied is given back
// to the system whole (one empty block is kept, so that a connection coming and going does
// not map and unmap).
//
// A block is aligned to its size, so a slot finds its block from its address. Slots are cut
// from a block as they are first needed, so pages nobody used are never touched. Under
// AddressSanitizer a free slot is poisoned, and the blocks are roots for the leak checker.
//
// Thread-safe: a mutex, since slots are taken and given back once per connection, not per call.
class SlabPool {
 public:
  static constexpr size_t kBlockBytes = 64 * 1024;

  // slot_bytes: at most what a block holds past its header; rounded up to 16.
  explicit SlabPool(size_t slot_bytes);
  // Every slot must have been given back.
  ~SlabPool();
  SlabPool(const SlabPool&) = delete;
  SlabPool& operator=(const SlabPool&) = delete;

  // A slot of slot_bytes(), 16-byte aligned. Throws std::bad_alloc, as operator new does, when
  // the system has no memory left.
  void* Allocate();
  // A slot Allocate gave.
  void Deallocate(void* slot);

  size_t slot_bytes() const { return slot_bytes_; }
  size_t slots_per_block() const { return slots_per_block_; }
  // Blocks mapped, and slots in use.
  size_t blocks() const;
  size_t live() const;
  // Slots in use in every pool of the process (for tests).
  static size_t LiveInAllPools();

 private:
  struct Block;

  Block* MapBlock();
  void UnmapBlock(Block* block);
  // The list of blocks with a free slot.
  void PushFront(Block* block);
  void Unlink(Block* block);
  bool Full(const Block* block) const;
  char* Slot(Block* block, size_t index) const;

  const size_t slot_bytes_;
  const size_t slots_per_block_;
  mutable std::mutex mu_;
  Block* partial_ = nullptr;  // blocks with a free slot, most recently freed into first
  size_t blocks_ = 0;
  size_t live_ = 0;
};

// The pool of objects of type T: one per type, for the life of the process (never destroyed,
// so that an object freed during static destruction at exit still finds its pool).
template <typename T>
SlabPool& SlabPoolFor() {
  static SlabPool* const pool = new SlabPool(sizeof(T));
  return *pool;
}

// An allocator for std::allocate_shared: the object and its reference counts share one slot of
// the pool for their type. Anything else (n != 1) goes to the heap.
template <typename T>
class SlabAllocator {
 public:
  static_assert(alignof(T) <= 16, "a slot is 16-byte aligned");
  static_assert(sizeof(T) <= SlabPool::kBlockBytes / 4, "a block holds at least four slots");
  using value_type = T;

  SlabAllocator() = default;
  template <typename U>
  SlabAllocator(const SlabAllocator<U>&) {}  // NOLINT: rebinding, as allocators do

  T* allocate(size_t n) {
    if (n != 1) {
      return std::allocator<T>().allocate(n);
    }
    return static_cast<T*>(SlabPoolFor<T>().Allocate());
  }
  void deallocate(T* p, size_t n) {
    if (n != 1) {
      return std::allocator<T>().deallocate(p, n);
    }
    SlabPoolFor<T>().Deallocate(p);
  }

  template <typename U>
  bool operator==(const SlabAllocator<U>&) const {
    return true;
  }
  template <typename U>
  bool operator!=(const SlabAllocator<U>&) const {
    return false;
  }
};

// std::make_shared, with the object in its type's pool (on the heap under AddressSanitizer).
template <typename T, typename... Args>
std::shared_ptr<T> MakeSlabShared(Args&&... args) {
#ifdef RELAY_SLAB_SANITIZED
  return std::make_shared<T>(std::forward<Args>(args)...);
#else
  return std::allocate_shared<T>(SlabAllocator<T>(), std::forward<Args>(args)...);
#endif
}

}  // namespace relay::common
