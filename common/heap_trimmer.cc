#include "common/heap_trimmer.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "common/log.h"

namespace relay::common {

namespace {

// While nothing changes, the free memory is read once in this many periods (a minute at the
// services' 2 s).
constexpr int kLongestTicks = 32;

int64_t ResidentBytes() {
  long pages_total = 0;
  long pages_resident = 0;
  FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm == nullptr) {
    return 0;
  }
  int read = std::fscanf(statm, "%ld %ld", &pages_total, &pages_resident);
  std::fclose(statm);
  return read == 2 ? static_cast<int64_t>(pages_resident) * sysconf(_SC_PAGESIZE) : 0;
}

}  // namespace

bool TrimPolicy::ShouldLook(int64_t resident_bytes) {
  ++ticks_since_look_;
  int64_t moved = resident_bytes - resident_at_look_;
  bool moving = !started_ || static_cast<size_t>(moved < 0 ? -moved : moved) >= threshold_;
  if (!moving && ticks_since_look_ < ticks_between_looks_) {
    return false;
  }
  // While memory moves, a burst is under way (or a trim just gave memory back): look on
  // every tick, so that what it frees when it ends is found within a few ticks. Connections
  // that stay for long and then all leave do not move resident memory; the backed-off looks
  // find what they freed, within longest_ticks.
  ticks_between_looks_ = moving ? 1 : ticks_between_looks_;
  resident_at_look_ = resident_bytes;
  ticks_since_look_ = 0;
  return true;
}

bool TrimPolicy::ShouldTrim(size_t free_bytes) {
  if (!started_ || free_bytes < low_) {
    started_ = true;
    low_ = free_bytes;
  }
  if (free_bytes - low_ < threshold_) {
    // Nothing to give back: look half as often until something moves.
    ticks_between_looks_ = std::min(2 * ticks_between_looks_, longest_ticks_);
    return false;
  }
  // Trimming leaves the chunks free in the allocator's books (only their pages go back):
  // from here, what counts is growth beyond this level.
  low_ = free_bytes;
  ticks_between_looks_ = 1;
  return true;
}

size_t AllocatorFreeBytes() { return mallinfo2().fordblks; }

int64_t TrimHeap() {
  int64_t before = ResidentBytes();
  malloc_trim(0);
  return before - ResidentBytes();
}

HeapTrimmer::HeapTrimmer(absl::Duration period, size_t threshold)
    : thread_([this, period, threshold] { Run(period, threshold); }) {}

HeapTrimmer::~HeapTrimmer() {
  stop_.Notify();
  thread_.join();
}

void HeapTrimmer::Run(absl::Duration period, size_t threshold) {
  TrimPolicy policy(threshold, kLongestTicks);
  while (!stop_.WaitForNotificationWithTimeout(period)) {
    if (!policy.ShouldLook(ResidentBytes())) {
      continue;
    }
    size_t free_bytes = AllocatorFreeBytes();
    if (policy.ShouldTrim(free_bytes)) {
      int64_t released = TrimHeap();
      LogInfo("heap trimmed", {{"free_bytes", static_cast<uint64_t>(free_bytes)},
                               {"released_bytes", released}});
    }
  }
}

}  // namespace relay::common
