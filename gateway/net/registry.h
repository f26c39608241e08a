#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace relay::gateway {

// A registry key for what a session is for (a stream's agent session id):
// never 0, which stands for none.
inline uint64_t RegistryKey(absl::string_view of) {
  uint64_t key = absl::Hash<absl::string_view>{}(of);
  return key == 0 ? 1 : key;
}

// Live sessions of one kind by id, holding weak_ptrs: a session lives as long
// as its own pending operations, and the registry never keeps it alive.
// Thread-safe; snapshots are taken under the lock and used after it.
//
// Each session is added with its group (its router shard): a link's fan-out
// takes a snapshot of its own shard's sessions only, without touching the
// others' (a weak_ptr locked is a cache miss each, under the lock that every
// command's Find waits for).
//
// A session may also be added with a key (a stream: a hash of its agent
// session's id), by which WithKey finds it without visiting the others: every
// gateway hears of every session's end, and a gateway holding 12,000 streams
// handed each of them an item for every one.
template <typename T>
class Registry {
 public:
  static constexpr size_t kAnyGroup = ~size_t{0};
  static constexpr uint64_t kNoKey = 0;

  uint64_t Add(std::weak_ptr<T> item, size_t group, uint64_t key = kNoKey)
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    uint64_t id = next_id_++;
    items_.emplace(id, Entry{std::move(item), group, key});
    if (key != kNoKey) {
      by_key_[key].push_back(id);
    }
    return id;
  }

  void Remove(uint64_t id) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    auto it = items_.find(id);
    if (it == items_.end()) {
      return;
    }
    if (uint64_t key = it->second.key; key != kNoKey) {
      auto keyed = by_key_.find(key);
      auto& ids = keyed->second;
      ids.erase(std::find(ids.begin(), ids.end(), id));
      if (ids.empty()) {
        by_key_.erase(keyed);
      }
    }
    items_.erase(it);
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

  // The live sessions added with key (never kNoKey). Another key's session
  // may be among them when two keys' hashes meet: the caller checks.
  std::vector<std::shared_ptr<T>> WithKey(uint64_t key) const ABSL_LOCKS_EXCLUDED(mu_) {
    std::vector<std::shared_ptr<T>> out;
    absl::MutexLock lock(&mu_);
    auto keyed = by_key_.find(key);
    if (keyed == by_key_.end()) {
      return out;
    }
    for (uint64_t id : keyed->second) {
      if (auto item = items_.at(id).item.lock()) {
        out.push_back(std::move(item));
      }
    }
    return out;
  }

 private:
  struct Entry {
    std::weak_ptr<T> item;
    size_t group;
    uint64_t key;
  };

  mutable absl::Mutex mu_;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  absl::flat_hash_map<uint64_t, Entry> items_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, absl::InlinedVector<uint64_t, 1>> by_key_ ABSL_GUARDED_BY(mu_);
};

}  // namespace relay::gateway
