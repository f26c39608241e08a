#include "router/core/routing_table.h"

#include <algorithm>
#include <utility>

namespace relay::router {

AttachResult RoutingTable::Attach(TabRecord tab) {
  absl::MutexLock lock(&mu_);
  AttachResult result;
  auto it = by_account_.find(tab.account);
  if (it != by_account_.end()) {
    if (it->second.ref == tab.ref) {
      // Announced again: same tab, same place (its generation cannot change).
      tab.connected_at = it->second.connected_at;
      it->second = std::move(tab);
      return result;
    }
    if (std::pair(it->second.generation, it->second.resumed_at) >
        std::pair(tab.generation, tab.resumed_at)) {
      result.attached = false;
      result.displaced = std::move(tab);
      return result;
    }
    result.displaced = std::move(it->second);
    account_of_.erase(result.displaced->ref);
  }
  account_of_[tab.ref] = tab.account;
  std::string account = tab.account;
  by_account_.insert_or_assign(std::move(account), std::move(tab));
  return result;
}

bool RoutingTable::Detach(const TabRef& ref) {
  absl::MutexLock lock(&mu_);
  auto it = account_of_.find(ref);
  if (it == account_of_.end()) {
    return false;
  }
  by_account_.erase(it->second);
  account_of_.erase(it);
  return true;
}

std::vector<TabRecord> RoutingTable::DetachLink(uint64_t link_id) {
  absl::MutexLock lock(&mu_);
  std::vector<TabRecord> gone;
  for (auto it = account_of_.begin(); it != account_of_.end();) {
    if (it->first.link_id != link_id) {
      ++it;
      continue;
    }
    auto tab = by_account_.find(it->second);
    gone.push_back(std::move(tab->second));
    by_account_.erase(tab);
    account_of_.erase(it++);
  }
  return gone;
}

size_t RoutingTable::size() const {
  absl::MutexLock lock(&mu_);
  return by_account_.size();
}

std::optional<TabRef> RoutingTable::Find(const std::string& account) const {
  absl::MutexLock lock(&mu_);
  auto it = by_account_.find(account);
  if (it == by_account_.end()) {
    return std::nullopt;
  }
  return it->second.ref;
}

std::optional<std::string> RoutingTable::AccountOf(const TabRef& ref) const {
  absl::MutexLock lock(&mu_);
  auto it = account_of_.find(ref);
  if (it == account_of_.end()) {
    return std::nullopt;
  }
  return it->second;
}

std::vector<TabRecord> RoutingTable::List(const std::string& account) const {
  std::vector<TabRecord> out;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, tab] : by_account_) {
      if (account.empty() || name == account) {
        out.push_back(tab);
      }
    }
  }
  std::sort(out.begin(), out.end(),
            [](const TabRecord& a, const TabRecord& b) { return a.account < b.account; });
  return out;
}

}  // namespace relay::router
