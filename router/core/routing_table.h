#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace relay::router {

// Names one tab: the gateway link it arrived on and the gateway's id for it.
struct TabRef {
  uint64_t link_id = 0;
  uint64_t tab_id = 0;

  friend bool operator==(const TabRef&, const TabRef&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const TabRef& ref) {
    return H::combine(std::move(h), ref.link_id, ref.tab_id);
  }
};

struct TabRecord {
  TabRef ref;
  std::string account;
  std::string role;
  std::string gateway_id;
  std::string client_name;
  std::string client_version;
  absl::Time connected_at;
  // When its ticket was redeemed (TabUp.generation): of two tabs of an
  // account, the one with the higher generation holds it, whichever of them
  // was announced last (a gateway that relinks re-announces older tabs).
  uint64_t generation = 0;
  // Of two connections of one generation (a tab that came back with a resume
  // credential, and its stale connection announced again by a relinking
  // gateway), the one admitted later holds it (TabUp.resumed_at).
  uint64_t resumed_at = 0;
};

// What Attach did: the tab is now its account's (attached), or a newer one
// holds the account and this one lost. displaced: the tab that lost, if any
// (the previous one, or this one when it was not attached); never the same
// tab announced again.
struct AttachResult {
  bool attached = true;
  std::optional<TabRecord> displaced;
};

// account -> its one tab. A newer tab of an account displaces the older one.
// Thread-safe; plain C++ so that it is tested without sockets.
class RoutingTable {
 public:
  // Makes tab its account's tab unless the account's tab is newer (a higher
  // generation, or the same one admitted later). The same tab announced again
  // (after a link loss) keeps its place and displaces nothing.
  AttachResult Attach(TabRecord tab) ABSL_LOCKS_EXCLUDED(mu_);

  // Removes the tab if it is still its account's tab; false if it was not
  // (already displaced or never attached).
  bool Detach(const TabRef& ref) ABSL_LOCKS_EXCLUDED(mu_);

  // Removes every tab of a gateway link and returns them.
  std::vector<TabRecord> DetachLink(uint64_t link_id) ABSL_LOCKS_EXCLUDED(mu_);

  std::optional<TabRef> Find(const std::string& account) const ABSL_LOCKS_EXCLUDED(mu_);

  // The account of a tab that is still its account's tab.
  std::optional<std::string> AccountOf(const TabRef& ref) const ABSL_LOCKS_EXCLUDED(mu_);

  // All tabs, or the one of account when it is not empty, ordered by account.
  // A copy of every record: for operators' listings, never for a count.
  std::vector<TabRecord> List(const std::string& account) const ABSL_LOCKS_EXCLUDED(mu_);
  // How many tabs hold their accounts (what /metrics and GetStats report; a
  // scrape of a shard of 100,000 tabs must not copy them all under the hub's
  // lock).
  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, TabRecord> by_account_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<TabRef, std::string> account_of_ ABSL_GUARDED_BY(mu_);
};

}  // namespace relay::router
