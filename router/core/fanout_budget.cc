#include "router/core/fanout_budget.h"

#include <algorithm>

namespace relay::router {

double FanoutBudget::Refill(Bucket& bucket, absl::Time now) const {
  if (now > bucket.at) {
    bucket.tokens = std::min(burst_, bucket.tokens + rate_ * absl::ToDoubleSeconds(now - bucket.at));
    bucket.at = now;
  }
  return bucket.tokens;
}

bool FanoutBudget::Spend(const std::string& account, size_t bytes, absl::Time now) {
  auto [it, fresh] = buckets_.try_emplace(account);
  if (fresh) {
    it->second = Bucket{burst_, now};
  }
  const double cost = static_cast<double>(bytes);
  if (Refill(it->second, now) < cost) {
    return false;
  }
  it->second.tokens -= cost;
  return true;
}

void FanoutBudget::Sweep(absl::Time now) {
  absl::erase_if(buckets_, [&](auto& entry) { return Refill(entry.second, now) >= burst_; });
}

}  // namespace relay::router
