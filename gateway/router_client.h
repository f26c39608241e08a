#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/time/time.h"

namespace relay::gateway {

// How a forwarded call ended, as the agent's gateway sees it.
struct ForwardOutcome {
  enum class Kind {
    kResult,             // payload: the tab's "result" JSON
    kError,              // payload: the tab's "error" JSON
    kNoTab,              // no tab of the account is connected
    kTabGone,            // the tab disconnected mid-call
    kDisplaced,          // another tab took over mid-call
    kTimeout,            // the call's deadline passed
    kCancelled,          // the agent's side cancelled it
    kRouterUnavailable,  // the account's router shard could not be reached
  };
  Kind kind = Kind::kRouterUnavailable;
  std::string payload;
};

struct ForwardRequest {
  std::string account;
  std::string session_id;
  std::string method;
  std::string params;  // JSON text, or empty
};

// Cancels a forwarded call. Safe from any thread, any number of times, also
// after the call ended.
class ForwardHandle {
 public:
  virtual ~ForwardHandle() = default;
  virtual void Cancel() = 0;
};

// What the router asks of this gateway's tabs. Called on gRPC threads: an
// implementation posts to the tab's executor and returns.
class TabCommandSink {
 public:
  virtual ~TabCommandSink() = default;
  virtual void OnAccepted(uint64_t tab_id, uint32_t agents) = 0;
  virtual void OnDeliver(uint64_t tab_id, uint64_t call_id, std::string method,
                         std::string params) = 0;
  virtual void OnCancel(uint64_t tab_id, uint64_t call_id, std::string reason) = 0;
  virtual void OnDisplace(uint64_t tab_id, std::string reason) = 0;
  // The link to the router that holds these tabs ended: their calls are lost
  // and they must be announced again when it comes back (OnLinkUp).
  virtual void OnLinkDown(size_t shard) = 0;
  virtual void OnLinkUp(size_t shard) = 0;
};

struct TabAnnouncement {
  uint64_t tab_id = 0;
  std::string account;
  std::string role;
  std::string client_name;
  std::string client_version;
};

// The gateway's view of the router shards. Thread-safe. Each account's traffic
// goes to the shard that ShardOf names.
class RouterClient {
 public:
  using ForwardCallback = std::function<void(ForwardOutcome)>;
  virtual ~RouterClient() = default;

  // Agent side: forwards one request. done runs exactly once, on a gRPC thread.
  virtual std::shared_ptr<ForwardHandle> Forward(ForwardRequest request, absl::Duration timeout,
                                                 ForwardCallback done) = 0;

  // Tab side, all fire-and-forget over the shard's link.
  virtual void TabUp(const TabAnnouncement& tab) = 0;
  virtual void TabDown(const std::string& account, uint64_t tab_id) = 0;
  virtual void TabReply(const std::string& account, uint64_t call_id, bool is_error,
                        std::string payload) = 0;

  virtual size_t ShardOf(const std::string& account) const = 0;

  // How many shards have a live link now (readiness), out of how many.
  virtual size_t ShardsUp() const = 0;
  virtual size_t ShardCount() const = 0;
};

}  // namespace relay::gateway
