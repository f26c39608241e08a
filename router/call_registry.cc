#include "router/call_registry.h"

#include "absl/strings/str_cat.h"

namespace relay::router {
namespace {

std::string RequestKey(const std::string& session, const std::string& request_id) {
  return absl::StrCat(session, "\n", request_id);
}

}  // namespace

uint64_t CallRegistry::Add(const TabRef& tab, CallSink* sink, CallInfo info) {
  absl::MutexLock lock(&mu_);
  uint64_t id = next_id_++;
  by_tab_[tab].insert(id);
  if (!info.request_id.empty()) {
    by_request_[RequestKey(info.session, info.request_id)] = id;
  }
  if (!info.progress_token.empty()) {
    by_progress_[info.progress_token] = id;
  }
  calls_.emplace(id, Entry{tab, sink, std::move(info)});
  return id;
}

CallSink* CallRegistry::EraseLocked(uint64_t call_id) {
  auto it = calls_.find(call_id);
  Entry& entry = it->second;
  CallSink* sink = entry.sink;
  auto ids = by_tab_.find(entry.tab);
  ids->second.erase(call_id);
  if (ids->second.empty()) {
    by_tab_.erase(ids);
  }
  if (!entry.info.request_id.empty()) {
    by_request_.erase(RequestKey(entry.info.session, entry.info.request_id));
  }
  if (!entry.info.progress_token.empty()) {
    by_progress_.erase(entry.info.progress_token);
  }
  calls_.erase(it);
  return sink;
}

std::pair<CallSink*, TabRef> CallRegistry::TakeAny(uint64_t call_id) {
  absl::MutexLock lock(&mu_);
  auto it = calls_.find(call_id);
  if (it == calls_.end()) {
    return {nullptr, TabRef{}};
  }
  TabRef tab = it->second.tab;
  return {EraseLocked(call_id), tab};
}

std::vector<CallSink*> CallRegistry::TakeAllOf(const TabRef& tab) {
  absl::MutexLock lock(&mu_);
  std::vector<CallSink*> out;
  auto ids = by_tab_.find(tab);
  if (ids == by_tab_.end()) {
    return out;
  }
  std::vector<uint64_t> copy(ids->second.begin(), ids->second.end());
  for (uint64_t id : copy) {
    out.push_back(EraseLocked(id));
  }
  return out;
}

uint64_t CallRegistry::FindByRequest(const std::string& session,
                                     const std::string& request_id) const {
  absl::MutexLock lock(&mu_);
  auto it = by_request_.find(RequestKey(session, request_id));
  return it == by_request_.end() ? 0 : it->second;
}

uint64_t CallRegistry::FindByProgressToken(const std::string& token) const {
  absl::MutexLock lock(&mu_);
  auto it = by_progress_.find(token);
  return it == by_progress_.end() ? 0 : it->second;
}

bool CallRegistry::With(uint64_t call_id, const TabRef* tab,
                        const std::function<void(CallSink&, const CallInfo&, const TabRef&)>& fn) {
  absl::MutexLock lock(&mu_);
  auto it = calls_.find(call_id);
  if (it == calls_.end() || (tab != nullptr && !(it->second.tab == *tab))) {
    return false;
  }
  fn(*it->second.sink, it->second.info, it->second.tab);
  return true;
}

size_t CallRegistry::InFlight(const TabRef& tab) const {
  absl::MutexLock lock(&mu_);
  auto ids = by_tab_.find(tab);
  return ids == by_tab_.end() ? 0 : ids->second.size();
}

}  // namespace relay::router
