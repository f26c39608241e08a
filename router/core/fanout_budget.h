#pragma once

#include <cstddef>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"

namespace relay::router {

// How many bytes of notifications each account may fan out to its agents'
// streams (a token bucket per account: a rate, and a burst): one account's
// tab that floods list changes to 256 sessions must not fill the links that
// every other account shares (ARCHITECTURE.md "Faults"). Over its budget, the
// account's own streams lose the events (they resume by replay). Plain C++,
// time passed in; not thread-safe (RouterCore's lock).
class FanoutBudget {
 public:
  FanoutBudget(size_t bytes_per_second, size_t burst_bytes)
      : rate_(static_cast<double>(bytes_per_second)), burst_(static_cast<double>(burst_bytes)) {}

  // Takes bytes from the account's budget; false (nothing taken) when it has not that many.
  bool Spend(const std::string& account, size_t bytes, absl::Time now);
  // Forgets accounts whose budget is full again (they cost nothing to forget).
  void Sweep(absl::Time now);

  size_t size() const { return buckets_.size(); }

 private:
  struct Bucket {
    double tokens = 0;
    absl::Time at;
  };
  double Refill(Bucket& bucket, absl::Time now) const;

  const double rate_;
  const double burst_;
  absl::flat_hash_map<std::string, Bucket> buckets_;
};

}  // namespace relay::router
