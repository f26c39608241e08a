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
// its low point after the last trim. Plain class; HeapTrimmer runs it.
class TrimPolicy {
 public:
  explicit TrimPolicy(size_t threshold) : threshold_(threshold) {}

  // free_bytes: what the allocator holds free now. True: trim now.
  bool ShouldTrim(size_t free_bytes);

 private:
  size_t threshold_;
  size_t low_ = 0;
  bool started_ = false;
};

// Free bytes the allocator holds (mallinfo2's fordblks).
size_t AllocatorFreeBytes();
// Gives free memory inside the heap back to the system (malloc_trim). Returns the resident
// bytes it gave back, as /proc/self/statm tells.
int64_t TrimHeap();

// A thread that checks every period and trims when the policy says so, logging what it gave
// back. Stops (and joins) on destruction.
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
