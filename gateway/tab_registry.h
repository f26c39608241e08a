#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "gateway/router_client.h"

namespace relay::gateway {

class TabSession;

// This gateway's live tabs by id, holding weak_ptrs: a tab lives as long as
// its own pending operations. Receives the routers' commands (on gRPC threads)
// and posts each to its tab's strand. Thread-safe.
class TabRegistry final : public TabCommandSink {
 public:
  void SetRouter(RouterClient* router) { router_.store(router); }

  uint64_t Add(std::weak_ptr<TabSession> tab) ABSL_LOCKS_EXCLUDED(mu_);
  void Remove(uint64_t tab_id) ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<std::shared_ptr<TabSession>> Snapshot() const ABSL_LOCKS_EXCLUDED(mu_);

  void OnAccepted(uint64_t tab_id, uint32_t agents) override;
  void OnDeliver(uint64_t tab_id, uint64_t call_id, std::string method,
                 std::string params) override;
  void OnCancel(uint64_t tab_id, uint64_t call_id, std::string reason) override;
  void OnDisplace(uint64_t tab_id, std::string reason) override;
  void OnLinkDown(size_t shard) override;
  void OnLinkUp(size_t shard) override;

 private:
  std::shared_ptr<TabSession> Find(uint64_t tab_id) const ABSL_LOCKS_EXCLUDED(mu_);

  std::atomic<RouterClient*> router_{nullptr};
  mutable absl::Mutex mu_;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  absl::flat_hash_map<uint64_t, std::weak_ptr<TabSession>> tabs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace relay::gateway
