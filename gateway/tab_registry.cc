#include "gateway/tab_registry.h"

#include "gateway/tab_session.h"

namespace relay::gateway {

uint64_t TabRegistry::Add(std::weak_ptr<TabSession> tab) {
  absl::MutexLock lock(&mu_);
  uint64_t id = next_id_++;
  tabs_.emplace(id, std::move(tab));
  return id;
}

void TabRegistry::Remove(uint64_t tab_id) {
  absl::MutexLock lock(&mu_);
  tabs_.erase(tab_id);
}

std::shared_ptr<TabSession> TabRegistry::Find(uint64_t tab_id) const {
  absl::MutexLock lock(&mu_);
  auto it = tabs_.find(tab_id);
  return it == tabs_.end() ? nullptr : it->second.lock();
}

std::vector<std::shared_ptr<TabSession>> TabRegistry::Snapshot() const {
  std::vector<std::shared_ptr<TabSession>> out;
  absl::MutexLock lock(&mu_);
  out.reserve(tabs_.size());
  for (const auto& [id, weak] : tabs_) {
    if (auto tab = weak.lock()) {
      out.push_back(std::move(tab));
    }
  }
  return out;
}

void TabRegistry::OnAccepted(uint64_t tab_id, uint32_t agents) {
  if (auto tab = Find(tab_id)) {
    tab->PostAccepted(agents);
  }
}

void TabRegistry::OnDeliver(uint64_t tab_id, uint64_t call_id, std::string method,
                            std::string params) {
  if (auto tab = Find(tab_id)) {
    tab->PostDeliver(call_id, std::move(method), std::move(params));
  }
  // Else the tab has left; its TabDown, already on the link, makes the router
  // fail the call.
}

void TabRegistry::OnCancel(uint64_t tab_id, uint64_t call_id, std::string reason) {
  if (auto tab = Find(tab_id)) {
    tab->PostCancel(call_id, std::move(reason));
  }
}

void TabRegistry::OnDisplace(uint64_t tab_id, std::string reason) {
  if (auto tab = Find(tab_id)) {
    tab->PostDisplace(std::move(reason));
  }
}

void TabRegistry::OnLinkDown(size_t shard) {
  for (auto& tab : Snapshot()) {
    tab->PostLinkDown(shard);
  }
}

void TabRegistry::OnLinkUp(size_t shard) {
  if (router_.load() == nullptr) {
    return;  // still starting: there are no tabs yet
  }
  for (auto& tab : Snapshot()) {
    tab->PostReannounce(shard);
  }
}

}  // namespace relay::gateway
