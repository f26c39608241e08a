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
//
// Each session is added with its group (its router shard): a link's fan-out
// takes a snapshot of its own shard's sessions only, without touching the
// others' (a weak_ptr locked is a cache miss each, under the lock that every
// command's Find waits for).
template <typename T>
class Registry {
 public:
  static constexpr size_t kAnyGroup = ~size_t{0};

  uint64_t Add(std::weak_ptr<T> item, size_t group) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    uint64_t id = next_id_++;
    items_.emplace(id, Entry{std::move(item), group});
    return id;
  }

  void Remove(uint64_t id) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    items_.erase(id);
  }

  std::shared_ptr<T> Find(uint64_t id) const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    auto it = items_.find(id);
    return it == items_.end() ? nullptr : it->second.item.lock();
  }

  size_t size() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return items_.size();
  }

  // The live sessions of group, or of every group.
  std::vector<std::shared_ptr<T>> Snapshot(size_t group = kAnyGroup) const
      ABSL_LOCKS_EXCLUDED(mu_) {
    std::vector<std::shared_ptr<T>> out;
    absl::MutexLock lock(&mu_);
    out.reserve(items_.size());
    for (const auto& [id, entry] : items_) {
      if (group != kAnyGroup && entry.group != group) {
        continue;
      }
      if (auto item = entry.item.lock()) {
        out.push_back(std::move(item));
      }
    }
    return out;
  }

 private:
  struct Entry {
    std::weak_ptr<T> item;
    size_t group;
  };

  mutable absl::Mutex mu_;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  absl::flat_hash_map<uint64_t, Entry> items_ ABSL_GUARDED_BY(mu_);
};

}  // namespace relay::gateway
