#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"

namespace relay::router {

// The tab's final answer to a 2026-07-28 call that no gateway was waiting
// for: it came while the call was parked between the rounds of a multi
// round-trip request, or in the moment before the park reached the router.
// MCP-SURFACE.md: the tab's final answer is the agent's retry's result, so it
// is kept until that retry takes it (once) or its time is up, instead of
// telling the retry "call again", which would run the tool again. Bounded
// (oldest dropped first). Plain C++, not thread-safe (RouterCore's lock).
class KeptAnswers {
 public:
  struct Answer {
    std::string account;
    std::string session;
    bool is_tool_call = false;
    bool is_error = false;
    std::string payload;  // the tab's "result" or "error" JSON
    absl::Time until;
  };

  KeptAnswers(size_t max_answers, size_t max_bytes)
      : max_answers_(max_answers), max_bytes_(max_bytes) {}

  void Keep(uint64_t call_id, Answer answer);
  // The answer of call_id, if kept for this account and not expired; taken.
  std::optional<Answer> Take(uint64_t call_id, const std::string& account, absl::Time now);
  // Drops what expired.
  void Expire(absl::Time now);

  size_t size() const { return answers_.size(); }
  size_t bytes() const { return bytes_; }
  size_t queued_ids() const { return order_.size(); }  // for tests: the eviction queue's length

 private:
  void Drop(uint64_t call_id);

  const size_t max_answers_;
  const size_t max_bytes_;
  absl::flat_hash_map<uint64_t, Answer> answers_;
  std::deque<uint64_t> order_;  // oldest first; may name answers already taken
  size_t bytes_ = 0;
};

}  // namespace relay::router
