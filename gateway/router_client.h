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
    kCancelled,          // cancelled (agent's notifications/cancelled, or it went away)
    kRouterUnavailable,  // the account's router shard could not be reached
    kSessionEnded,       // the session was ended (DELETE) meanwhile
  };
  static constexpr size_t kKinds = 9;
  Kind kind = Kind::kRouterUnavailable;
  std::string payload;
  std::string view_line;  // with kResult of tools/call: the "view changed" line to append
};

struct ForwardRequest {
  std::string account;
  std::string session_id;
  std::string method;
  std::string params;          // JSON text, or empty
  std::string request_id;      // the agent's id, as JSON
  std::string progress_token;  // the relay's token put into params, or empty
};

// Cancels a forwarded call. Safe from any thread, any number of times, also
// after the call ended.
class ForwardHandle {
 public:
  virtual ~ForwardHandle() = default;
  virtual void Cancel() = 0;
};

// What the routers ask of this gateway's tabs and streams. Called on gRPC
// threads: an implementation posts to the session's executor and returns.
class TabCommandSink {
 public:
  virtual ~TabCommandSink() = default;
  virtual void OnAccepted(uint64_t tab_id, uint32_t agents) = 0;
  virtual void OnDeliver(uint64_t tab_id, uint64_t call_id, std::string method,
                         std::string params) = 0;
  virtual void OnCancel(uint64_t tab_id, uint64_t call_id, std::string reason) = 0;
  virtual void OnDisplace(uint64_t tab_id, std::string reason) = 0;
  virtual void OnAgents(uint64_t tab_id, uint32_t count) = 0;
  virtual void OnTabResponse(uint64_t tab_id, std::string tab_request_id, bool is_error,
                             std::string payload) = 0;
  virtual void OnStreamEvent(uint64_t stream_id, uint64_t event_id, std::string message) = 0;
  virtual void OnSessionEnded(std::string session_id) = 0;
  // The link to a shard ended: the calls of its tabs are lost, and its tabs
  // and streams must be announced again when it comes back (OnLinkUp).
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

// A notification of a tab for the agents of its account (TAB-PROTOCOL.md).
struct TabNote {
  uint64_t tab_id = 0;
  std::string method;
  std::string params;  // JSON object
  std::string level;   // notifications/message
  std::string uri;     // notifications/resources/updated
  std::string line;    // its _meta["relay/line"]
  uint64_t call_id = 0;        // _meta["relay/requestId"], if tied to a call
  std::string progress_token;  // notifications/progress
};

// The gateway's view of the router shards. Thread-safe. Each account's traffic
// goes to the shard that ShardOf names. Everything but Forward is
// fire-and-forget over the shard's link (dropped while it is down).
class RouterClient {
 public:
  using EventCallback = std::function<void(std::string message)>;
  using ForwardCallback = std::function<void(ForwardOutcome)>;
  virtual ~RouterClient() = default;

  // Agent side: forwards one request. on_event runs for each message the tab
  // sends the agent before the answer; done runs exactly once, last. Both run
  // on gRPC threads.
  virtual std::shared_ptr<ForwardHandle> Forward(ForwardRequest request, absl::Duration timeout,
                                                 EventCallback on_event,
                                                 ForwardCallback done) = 0;

  // Agent sessions.
  virtual void SessionTouch(const std::string& account, const std::string& session) = 0;
  virtual void SessionEnd(const std::string& account, const std::string& session) = 0;
  virtual void StreamOpen(const std::string& account, const std::string& session,
                          uint64_t stream_id, uint64_t last_event_id) = 0;
  virtual void StreamClose(const std::string& account, const std::string& session,
                           uint64_t stream_id) = 0;
  virtual void Subscribe(const std::string& account, const std::string& session,
                         const std::string& uri, bool on) = 0;
  virtual void SetLogLevel(const std::string& account, const std::string& session,
                           const std::string& level) = 0;
  virtual void AgentReply(const std::string& account, const std::string& session,
                          uint64_t call_id, const std::string& tab_request_id, bool is_error,
                          std::string payload) = 0;
  virtual void AgentCancel(const std::string& account, const std::string& session,
                           const std::string& request_id, const std::string& reason) = 0;

  // Tabs.
  virtual void TabUp(const TabAnnouncement& tab) = 0;
  virtual void TabDown(const std::string& account, uint64_t tab_id) = 0;
  virtual void TabReply(const std::string& account, uint64_t call_id, bool is_error,
                        std::string payload) = 0;
  virtual void TabNotify(const std::string& account, TabNote note) = 0;
  virtual void TabRequest(const std::string& account, uint64_t tab_id, uint64_t call_id,
                          std::string message, const std::string& tab_request_id) = 0;

  virtual size_t ShardOf(const std::string& account) const = 0;

  // How many shards have a live link now (readiness).
  virtual size_t ShardsUp() const = 0;
};

}  // namespace relay::gateway
