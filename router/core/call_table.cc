#include "router/core/call_table.h"

#include "absl/strings/str_cat.h"

namespace relay::router {

std::string CallTable::RequestKey(const std::string& session, const std::string& request_id) {
  return absl::StrCat(session, "\n", request_id);
}

uint64_t CallTable::Add(Call call) {
  uint64_t id = next_id_++;
  by_tab_[call.tab].insert(id);
  if (call.origin.link_id != 0) {
    by_link_[call.origin.link_id].insert(id);
    by_origin_[call.origin] = id;
  }
  if (!call.request_id.empty()) {
    by_request_[RequestKey(call.session, call.request_id)] = id;
  }
  if (!call.progress_token.empty()) {
    by_progress_[call.progress_token] = id;
  }
  ++per_account_[call.account];
  calls_.emplace(id, std::move(call));
  return id;
}

const Call* CallTable::Find(uint64_t call_id) const {
  auto it = calls_.find(call_id);
  return it == calls_.end() ? nullptr : &it->second;
}

Call* CallTable::FindMutable(uint64_t call_id) {
  auto it = calls_.find(call_id);
  return it == calls_.end() ? nullptr : &it->second;
}

namespace {

// Erases key from index only if it still names id.
template <typename Map, typename Key>
void EraseIfNames(Map& index, const Key& key, uint64_t id) {
  auto it = index.find(key);
  if (it != index.end() && it->second == id) {
    index.erase(it);
  }
}

template <typename Map, typename Key>
void EraseFromSet(Map& index, const Key& key, uint64_t id) {
  auto it = index.find(key);
  if (it == index.end()) {
    return;
  }
  it->second.erase(id);
  if (it->second.empty()) {
    index.erase(it);
  }
}

}  // namespace

Call CallTable::EraseAt(absl::flat_hash_map<uint64_t, Call>::iterator it) {
  uint64_t id = it->first;
  Call call = std::move(it->second);
  calls_.erase(it);
  EraseFromSet(by_tab_, call.tab, id);
  EraseFromSet(by_link_, call.origin.link_id, id);
  EraseIfNames(by_origin_, call.origin, id);
  if (!call.request_id.empty()) {
    EraseIfNames(by_request_, RequestKey(call.session, call.request_id), id);
  }
  if (!call.progress_token.empty()) {
    EraseIfNames(by_progress_, call.progress_token, id);
  }
  auto count = per_account_.find(call.account);
  if (--count->second == 0) {
    per_account_.erase(count);
  }
  return call;
}

void CallTable::Rehome(uint64_t call_id, CallOrigin origin) {
  auto it = calls_.find(call_id);
  if (it == calls_.end()) {
    return;
  }
  Call& call = it->second;
  EraseFromSet(by_link_, call.origin.link_id, call_id);
  EraseIfNames(by_origin_, call.origin, call_id);
  call.origin = origin;
  if (origin.link_id != 0) {
    by_link_[origin.link_id].insert(call_id);
    by_origin_[origin] = call_id;
  }
}

std::optional<Call> CallTable::Take(uint64_t call_id) {
  auto it = calls_.find(call_id);
  if (it == calls_.end()) {
    return std::nullopt;
  }
  return EraseAt(it);
}

std::vector<std::pair<uint64_t, Call>> CallTable::TakeIds(
    const absl::flat_hash_set<uint64_t>* ids) {
  std::vector<std::pair<uint64_t, Call>> out;
  if (ids == nullptr) {
    return out;
  }
  // Copied first: erasing removes from the set being walked.
  std::vector<uint64_t> copy(ids->begin(), ids->end());
  out.reserve(copy.size());
  for (uint64_t id : copy) {
    out.emplace_back(id, EraseAt(calls_.find(id)));
  }
  return out;
}

std::vector<std::pair<uint64_t, Call>> CallTable::TakeAllOf(const TabRef& tab) {
  auto it = by_tab_.find(tab);
  return TakeIds(it == by_tab_.end() ? nullptr : &it->second);
}

std::vector<std::pair<uint64_t, Call>> CallTable::TakeAllFrom(uint64_t origin_link) {
  auto it = by_link_.find(origin_link);
  return TakeIds(it == by_link_.end() ? nullptr : &it->second);
}

uint64_t CallTable::FindByOrigin(const CallOrigin& origin) const {
  auto it = by_origin_.find(origin);
  return it == by_origin_.end() ? 0 : it->second;
}

uint64_t CallTable::FindByRequest(const std::string& session,
                                  const std::string& request_id) const {
  auto it = by_request_.find(RequestKey(session, request_id));
  return it == by_request_.end() ? 0 : it->second;
}

uint64_t CallTable::FindByProgressToken(const std::string& token) const {
  auto it = by_progress_.find(token);
  return it == by_progress_.end() ? 0 : it->second;
}

size_t CallTable::InFlight(const TabRef& tab) const {
  auto it = by_tab_.find(tab);
  return it == by_tab_.end() ? 0 : it->second.size();
}

size_t CallTable::InFlightOf(const std::string& account) const {
  auto it = per_account_.find(account);
  return it == per_account_.end() ? 0 : it->second;
}

}  // namespace relay::router
