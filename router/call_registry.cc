#include "router/call_registry.h"

namespace relay::router {

uint64_t CallRegistry::Add(const TabRef& tab, CallSink* sink) {
  absl::MutexLock lock(&mu_);
  uint64_t id = next_id_++;
  calls_.emplace(id, Entry{tab, sink});
  by_tab_[tab].insert(id);
  return id;
}

CallSink* CallRegistry::EraseLocked(uint64_t call_id, const TabRef& tab) {
  auto it = calls_.find(call_id);
  CallSink* sink = it->second.sink;
  calls_.erase(it);
  auto ids = by_tab_.find(tab);
  ids->second.erase(call_id);
  if (ids->second.empty()) {
    by_tab_.erase(ids);
  }
  return sink;
}

CallSink* CallRegistry::Take(uint64_t call_id, const TabRef& tab) {
  absl::MutexLock lock(&mu_);
  auto it = calls_.find(call_id);
  if (it == calls_.end() || !(it->second.tab == tab)) {
    return nullptr;
  }
  return EraseLocked(call_id, tab);
}

std::pair<CallSink*, TabRef> CallRegistry::TakeAny(uint64_t call_id) {
  absl::MutexLock lock(&mu_);
  auto it = calls_.find(call_id);
  if (it == calls_.end()) {
    return {nullptr, TabRef{}};
  }
  TabRef tab = it->second.tab;
  return {EraseLocked(call_id, tab), tab};
}

std::vector<CallSink*> CallRegistry::TakeAllOf(const TabRef& tab) {
  absl::MutexLock lock(&mu_);
  std::vector<CallSink*> out;
  auto ids = by_tab_.find(tab);
  if (ids == by_tab_.end()) {
    return out;
  }
  for (uint64_t id : ids->second) {
    auto it = calls_.find(id);
    out.push_back(it->second.sink);
    calls_.erase(it);
  }
  by_tab_.erase(ids);
  return out;
}

size_t CallRegistry::InFlight(const TabRef& tab) const {
  absl::MutexLock lock(&mu_);
  auto ids = by_tab_.find(tab);
  return ids == by_tab_.end() ? 0 : ids->second.size();
}

}  // namespace relay::router
