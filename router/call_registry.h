#pragma once

#include <cstdint>
#include <functional>
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
  enum class Kind { kResult, kError, kNoTab, kTabGone, kDisplaced, kCancelled, kSessionEnded };
  Kind kind = Kind::kResult;
  std::string payload;  // JSON of the tab's result or error, for kResult/kError
};

// Whoever waits for a call's answer. Complete is called at most once, by
// whichever party took the call out of the registry, on any thread. Event
// (messages for the agent before the answer) only through CallRegistry::With.
class CallSink {
 public:
  virtual ~CallSink() = default;
  virtual void Event(std::string message) = 0;
  virtual void Complete(CallOutcome outcome) = 0;
};

// What the router knows of a call besides its tab.
struct CallInfo {
  std::string session;
  std::string request_id;      // the agent's id, as JSON
  std::string progress_token;  // the relay's progress token, or empty
  bool is_tool_call = false;
};

// The calls in flight: call id -> (tab, sink, info). TakeAny and TakeAllOf remove calls, so
// that exactly one of the tab's answer, a cancellation, the tab leaving or its
// displacement completes it. Thread-safe; plain C++.
class CallRegistry {
 public:
  // first_id: see Add.
  explicit CallRegistry(uint64_t first_id) : next_id_(first_id) {}

  // Returns the new call's id: unique for the life of the process, counting
  // up from first_id.
  uint64_t Add(const TabRef& tab, CallSink* sink, CallInfo info) ABSL_LOCKS_EXCLUDED(mu_);

  // Removes the call whatever its tab (the agent's side gave up). Returns the
  // sink and the tab it was sent to, or {nullptr, {}}.
  std::pair<CallSink*, TabRef> TakeAny(uint64_t call_id) ABSL_LOCKS_EXCLUDED(mu_);

  // Removes and returns every call in flight to tab.
  std::vector<CallSink*> TakeAllOf(const TabRef& tab) ABSL_LOCKS_EXCLUDED(mu_);

  // The call of an agent's request id in a session, or 0.
  uint64_t FindByRequest(const std::string& session, const std::string& request_id) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // The call that handed out a progress token, or 0.
  uint64_t FindByProgressToken(const std::string& token) const ABSL_LOCKS_EXCLUDED(mu_);

  // Runs fn on a call still in flight, under the registry's lock so that the
  // call cannot complete meanwhile. fn must be quick and must not call back
  // into the registry. Returns false when the call is not in flight (or, with
  // a non-zero tab, is another tab's).
  bool With(uint64_t call_id, const TabRef* tab,
            const std::function<void(CallSink&, const CallInfo&, const TabRef&)>& fn)
      ABSL_LOCKS_EXCLUDED(mu_);

  size_t InFlight(const TabRef& tab) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Entry {
    TabRef tab;
    CallSink* sink;
    CallInfo info;
  };
  CallSink* EraseLocked(uint64_t call_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, Entry> calls_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<TabRef, absl::flat_hash_set<uint64_t>> by_tab_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, uint64_t> by_request_ ABSL_GUARDED_BY(mu_);  // session+id
  absl::flat_hash_map<std::string, uint64_t> by_progress_ ABSL_GUARDED_BY(mu_);
};

}  // namespace relay::router
