#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace relay::gateway {

// Live sessions of one kind by id, holding weak_ptrs: a session lives as long
// as its own pending operations, and the registry never keeps it alive.
// Thread-safe; snapshots are taken under the lock and used after it.
template <typename T>
class Registry {
 public:
  uint64_t Add(std::weak_ptr<T> item) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    uint64_t id = next_id_++;
    items_.emplace(id, std::move(item));
    return id;
  }

  void Remove(uint64_t id) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    items_.erase(id);
  }

  std::shared_ptr<T> Find(uint64_t id) const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    auto it = items_.find(id);
    return it == items_.end() ? nullptr : it->second.lock();
  }

  size_t size() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return items_.size();
  }

  std::vector<std::shared_ptr<T>> Snapshot() const ABSL_LOCKS_EXCLUDED(mu_) {
    std::vector<std::shared_ptr<T>> out;
    absl::MutexLock lock(&mu_);
    out.reserve(items_.size());
    for (const auto& [id, weak] : items_) {
      if (auto item = weak.lock()) {
        out.push_back(std::move(item));
      }
    }
    return out;
  }

 private:
  mutable absl::Mutex mu_;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  absl::flat_hash_map<uint64_t, std::weak_ptr<T>> items_ ABSL_GUARDED_BY(mu_);
};

}  // namespace relay::gateway
