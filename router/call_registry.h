#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "router/routing_table.h"

namespace relay::router {

// How a forwarded call ended, before it becomes a gRPC message.
struct CallOutcome {
  enum class Kind { kResult, kError, kNoTab, kTabGone, kDisplaced };
  Kind kind = Kind::kResult;
  std::string payload;  // JSON of the tab's result or error, for kResult/kError
};

// Whoever waits for a call's answer. Complete is called at most once, by
// whichever party took the call out of the registry, on any thread.
class CallSink {
 public:
  virtual ~CallSink() = default;
  virtual void Complete(CallOutcome outcome) = 0;
};

// The calls in flight: call id -> (tab, sink). Take* removes a call, so that
// exactly one of the tab's answer, a cancellation, the tab leaving or its
// displacement completes it. Thread-safe; plain C++.
class CallRegistry {
 public:
  // Returns the new call's id: unique for the life of the process and, as the
  // tab sees it as a JSON-RPC id, started from a random-ish base so that ids
  // of a restarted router do not repeat the previous run's.
  explicit CallRegistry(uint64_t first_id) : next_id_(first_id) {}

  uint64_t Add(const TabRef& tab, CallSink* sink) ABSL_LOCKS_EXCLUDED(mu_);

  // Removes the call if it is still in flight and was sent to tab.
  CallSink* Take(uint64_t call_id, const TabRef& tab) ABSL_LOCKS_EXCLUDED(mu_);

  // Removes the call whatever its tab (the agent's side gave up). Returns the
  // sink and the tab it was sent to, or {nullptr, {}}.
  std::pair<CallSink*, TabRef> TakeAny(uint64_t call_id) ABSL_LOCKS_EXCLUDED(mu_);

  // Removes and returns every call in flight to tab.
  std::vector<CallSink*> TakeAllOf(const TabRef& tab) ABSL_LOCKS_EXCLUDED(mu_);

  size_t InFlight(const TabRef& tab) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Entry {
    TabRef tab;
    CallSink* sink;
  };
  CallSink* EraseLocked(uint64_t call_id, const TabRef& tab) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, Entry> calls_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<TabRef, absl::flat_hash_set<uint64_t>> by_tab_ ABSL_GUARDED_BY(mu_);
};

}  // namespace relay::router
