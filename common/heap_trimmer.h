#pragma once

#include <cstddef>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace relay::common {

// When to give the allocator's free memory back to the system. glibc keeps what a burst
// freed (a restarted gateway's tabs all coming back at once: their handshakes, verifications
// and buffers) in its arenas, resident, between the connections that stayed: after 6,000
// connections arrived at once a gateway stayed 20 KiB per connection larger, where connections
// arriving 100 at a time cost 5. So: trim once the free memory has grown by `threshold` since
// its low point after the last trim.
//
// Reading the free memory is not free: mallinfo2 walks every free chunk under the arena's lock,
// and after a storm of 19,000 connections that took 7.5–9.5 ms, during which the I/O thread's
// allocations wait (it lengthened the tail of every call; docs/decisions.md, "The trickle's
// control"). So the policy looks at the free memory on every tick only while resident memory
// moves (by `threshold` since the last look, up or down) or a trim was just made; while nothing
// changes it looks half as often each time, down to once in `longest_ticks`. A storm that ends
// soon after it arrived is trimmed within a few ticks; connections held for long that then
// all leave (resident memory does not move when they are freed) within `longest_ticks`.
// Plain class; HeapTrimmer runs it once a period.
class TrimPolicy {
 public:
  TrimPolicy(size_t threshold, int longest_ticks)
      : threshold_(threshold), longest_ticks_(longest_ticks) {}

  // A tick, with the process's resident bytes now (cheap to read). True: read the free bytes
  // and ask ShouldTrim.
  bool ShouldLook(int64_t resident_bytes);
  // free_bytes: what the allocator holds free now. True: trim now.
  bool ShouldTrim(size_t free_bytes);

 private:
  size_t threshold_;
  int longest_ticks_;
  size_t low_ = 0;
  bool started_ = false;
  int64_t resident_at_look_ = 0;
  int ticks_since_look_ = 0;
  int ticks_between_looks_ = 1;
};

// Free bytes the allocator holds (mallinfo2's fordblks).
size_t AllocatorFreeBytes();
// Gives free memory inside the heap back to the system (malloc_trim). Returns the resident
// bytes it gave back, as /proc/self/statm tells.
int64_t TrimHeap();

// A thread that ticks every period and trims when the policy says so, logging what it gave
// back; while nothing changes it looks at the free memory once in 32 periods at the least.
// Stops (and joins) on destruction.
class HeapTrimmer {
 public:
  HeapTrimmer(absl::Duration period, size_t threshold);
  ~HeapTrimmer();
  HeapTrimmer(const HeapTrimmer&) = delete;
  HeapTrimmer& operator=(const HeapTrimmer&) = delete;

 private:
  void Run(absl::Duration period, size_t threshold);

  absl::Notification stop_;
  std::thread thread_;  // last: it starts at once
};

}  // namespace relay::common
