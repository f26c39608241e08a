#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/time/time.h"
#include "router/core/routing_table.h"

namespace relay::router {

// Where a call came from: the agent's gateway link and that gateway's name for it.
struct CallOrigin {
  uint64_t link_id = 0;
  uint64_t call_ref = 0;
  friend bool operator==(const CallOrigin&, const CallOrigin&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const CallOrigin& o) {
    return H::combine(std::move(h), o.link_id, o.call_ref);
  }
};

// One call in flight from an agent's gateway to a tab.
struct Call {
  TabRef tab;
  CallOrigin origin;
  std::string account;
  std::string session;
  std::string request_id;      // the agent's id, as JSON
  std::string progress_token;  // the relay's progress token, or empty
  std::string trace_id;        // the agent gateway's id of the call, for logs and watchers
  bool is_tool_call = false;
  // 2026-07-28 calls: the tab's requests to the agent not answered yet (its
  // request id as JSON, the message), kept so that a retry on any gateway
  // can be asked them again, and whether the call waits for that retry.
  bool stateless = false;
  std::vector<std::pair<std::string, std::string>> pending;
  size_t pending_bytes = 0;
  bool parked = false;
  // The tab has asked the agent something: a park may be on its way, so the
  // tab's final answer is kept for the retry (KeptAnswers).
  bool asked = false;
  uint32_t round = 0;  // the last round parked or resumed
  absl::Time parked_until;
};

// Where a router's call ids start, from 64 random bits: a random point of
// [2^51, 3 * 2^51), so that ids stay below 2^53 (a tab in JavaScript reads
// them exactly) for 2^51 calls, and a restarted router's ids are unlikely to
// meet the ones its previous run left in tabs (they used to start at the
// wall clock, which a clock stepped back could repeat).
inline uint64_t FirstCallId(uint64_t random) { return (uint64_t{1} << 51) + (random >> 12); }

// The calls in flight, by the id the tab sees, with the indexes the router's
// rules need (by tab, by origin link, by the agent's request id, by progress
// token, per account). Take* removes a call, so that exactly one of the tab's
// answer, a cancellation, the tab leaving or the agent's gateway leaving ends
// it. Not thread-safe: RouterCore's lock covers it. Plain C++.
class CallTable {
 public:
  // first_id: ids count up from it, unique for the life of the process.
  explicit CallTable(uint64_t first_id) : next_id_(first_id) {}

  uint64_t Add(Call call);
  const Call* Find(uint64_t call_id) const;
  Call* FindMutable(uint64_t call_id);
  // The call now answers to origin (a retry re-homes a parked call); origin
  // {0, 0} parks it: no gateway waits for it.
  void Rehome(uint64_t call_id, CallOrigin origin);
  std::optional<Call> Take(uint64_t call_id);
  // Every call sent to tab, with its id.
  std::vector<std::pair<uint64_t, Call>> TakeAllOf(const TabRef& tab);
  // Every call that came from a gateway link.
  std::vector<std::pair<uint64_t, Call>> TakeAllFrom(uint64_t origin_link);

  // 0 when there is none.
  uint64_t FindByOrigin(const CallOrigin& origin) const;
  uint64_t FindByRequest(const std::string& session, const std::string& request_id) const;
  uint64_t FindByProgressToken(const std::string& token) const;

  size_t InFlight(const TabRef& tab) const;
  size_t InFlightOf(const std::string& account) const;
  size_t size() const { return calls_.size(); }

 private:
  static std::string RequestKey(const std::string& session, const std::string& request_id);
  Call EraseAt(absl::flat_hash_map<uint64_t, Call>::iterator it);
  std::vector<std::pair<uint64_t, Call>> TakeIds(const absl::flat_hash_set<uint64_t>* ids);

  uint64_t next_id_;
  absl::flat_hash_map<uint64_t, Call> calls_;
  absl::flat_hash_map<TabRef, absl::flat_hash_set<uint64_t>> by_tab_;
  absl::flat_hash_map<uint64_t, absl::flat_hash_set<uint64_t>> by_link_;
  absl::flat_hash_map<CallOrigin, uint64_t> by_origin_;
  // An agent may reuse a request id while the first call is in flight: the
  // index names the newest, and erasing the older one leaves it alone.
  absl::flat_hash_map<std::string, uint64_t> by_request_;
  absl::flat_hash_map<std::string, uint64_t> by_progress_;
  absl::flat_hash_map<std::string, size_t> per_account_;
};

}  // namespace relay::router
