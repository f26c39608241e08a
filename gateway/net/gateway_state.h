#pragma once

#include "absl/strings/string_view.h"
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/metrics.h"
#include "gateway/core/auth_client.h"
#include "gateway/core/lockout_memo.h"
#include "gateway/core/request_gate.h"
#include "gateway/core/mcp_dispatcher.h"
#include "gateway/core/router_client.h"
#include "gateway/core/recent_revocations.h"
#include "gateway/core/signed_out_users.h"
#include "gateway/core/tab_resume.h"

namespace relay::gateway {

class AgentStream;
class TabSession;
template <typename T>
class Registry;
class EndedSessions;
class TouchThrottle;
class TrustedProxies;

// One open connection of the gateway, counted for --max_connections while the
// object lives; moved from the HTTP session to the tab session on an upgrade.
class ConnectionSlot {
 public:
  ConnectionSlot() = default;
  explicit ConnectionSlot(std::atomic<int64_t>* count) : count_(count) { count_->fetch_add(1); }
  ConnectionSlot(ConnectionSlot&& other) noexcept : count_(std::exchange(other.count_, nullptr)) {}
  ConnectionSlot& operator=(ConnectionSlot&& other) noexcept {
    Release();
    count_ = std::exchange(other.count_, nullptr);
    return *this;
  }
  ~ConnectionSlot() { Release(); }

 private:
  void Release() {
    if (count_ != nullptr) {
      count_->fetch_sub(1);
      count_ = nullptr;
    }
  }
  std::atomic<int64_t>* count_ = nullptr;
};

struct GatewayOptions {
  size_t max_body_bytes = 4 * 1024 * 1024;
  size_t max_tab_message_bytes = 16 * 1024 * 1024;
  int max_json_depth = 100;
  int64_t max_connections = 100000;
  // A new connection's request header, and any header once its first byte is
  // in, must arrive within header_timeout; a keep-alive connection may idle
  // between requests for idle_timeout.
  absl::Duration header_timeout = absl::Seconds(10);
  absl::Duration idle_timeout = absl::Seconds(120);
  absl::Duration sse_keepalive = absl::Seconds(15);
  absl::Duration hello_timeout = absl::Seconds(10);
  // Pings every idle_timeout/2; a tab silent for idle_timeout is dropped: two
  // missed pings at 25 s.
  absl::Duration tab_idle_timeout = absl::Seconds(50);
};

// Counters of what agents and tabs did, for /metrics.
struct GatewayMetrics {
  common::Counter http_requests;
  common::Counter unauthorized;
  common::Counter locked_out;
  common::Counter auth_unavailable;
  common::Counter forwards;
  common::Counter forward_outcomes[ForwardOutcome::kKinds];  // by ForwardOutcome::Kind
  common::Histogram forward_seconds;  // from the agent's request to its answer
  common::Counter tabs_connected;
  common::Counter tabs_disconnected;
  common::Counter tabs_resumed;         // hellos with a good resume credential
  common::Counter tab_resumes_refused;  // ... with a bad, expired or signed-out one
  common::Counter connections_refused;  // over --max_connections
  common::Counter mcp_messages[kMcpMethodLabelCount];  // by kMcpMethodLabels
  // HTTP responses on the MCP path by status (kResponseCodes; the last counts any other).
  static constexpr int kResponseCodes[] = {200, 202, 204, 400, 401, 403, 404, 405,
                                           406, 413, 415, 429, 500, 503, 0};
  static constexpr size_t kResponseCodeCount = sizeof(kResponseCodes) / sizeof(int);
  common::Counter responses[kResponseCodeCount];
  void CountResponse(int status) {
    size_t i = 0;
    while (i + 1 < kResponseCodeCount && kResponseCodes[i] != status) {
      ++i;
    }
    responses[i].Add();
  }
  common::Counter router_link_downs;  // a shard's link ended (it reconnects)
  common::Counter accept_errors;        // e.g. out of file descriptors
  common::Counter request_timeouts;     // a request that did not come in time (RequestReader)
  common::Counter revocations;          // pushed by authsvc: a token's or a user's
};

// What a tab's session uses of the gateway, given through its constructor:
// all a TabSession can reach. Each member outlives every session.
struct TabServices {
  const GatewayOptions& options;
  const std::string& gateway_id;  // names the tab's log lines
  AuthClient& auth;               // redeems the hello's ticket
  const TabResumeSigner& resumes;  // or checks its resume credential, and signs the next
  const SignedOutUsers& signed_out;  // whose credentials a revocation ended
  RouterClient& router;           // the tab's announcement and everything it sends
  Registry<TabSession>& tabs;     // where the router's commands find it
  GatewayMetrics& metrics;
  const std::atomic<bool>& draining;  // a tab saying hello while draining goes elsewhere
};

// What an agent's stream (a GET, or a 2026-07-28 listen) uses of the gateway.
struct StreamServices {
  const GatewayOptions& options;
  RouterClient& router;            // the stream's open, close and subscriptions
  Registry<AgentStream>& streams;  // where the router's events find it
  const EndedSessions& ended;      // a stream of an ended session is not announced again
  const RecentRevocations& revocations;  // pushed while its verdict was on its way
  GatewayMetrics& metrics;
};

// What every session of the gateway shares (Beast's "shared_state"). Built in
// main, outlives every session. All members are thread-safe. The HTTP session
// reads requests of every kind and uses all of it; the sessions it hands a
// connection to get only their own services (ForTab, ForStream).
struct GatewayState {
  GatewayOptions options;
  std::string gateway_id;
  AuthClient* auth = nullptr;
  RouterClient* router = nullptr;
  Registry<TabSession>* tabs = nullptr;
  Registry<AgentStream>* streams = nullptr;  // open GET streams
  EndedSessions* ended = nullptr;
  TouchThrottle* touches = nullptr;
  const TrustedProxies* proxies = nullptr;
  const McpDispatcher* dispatcher = nullptr;
  const TabResumeSigner* resumes = nullptr;
  const SignedOutUsers* signed_out = nullptr;
  const RecentRevocations* revocations = nullptr;
  GatewayMetrics metrics;
  std::atomic<int64_t> connections{0};  // open HTTP and tab connections
  // Connections over --max_connections still being answered and closed (Listener::Refuse): not
  // counted above, but each holds a descriptor of the reserve for up to 2 s.
  std::atomic<int64_t> refusing{0};
  std::atomic<uint64_t> calls_started{0};  // numbers the trace ids of forwarded calls
  // Set on SIGTERM: new requests and tabs are sent elsewhere (503), the calls
  // in flight finish.
  std::atomic<bool> draining{false};
  LockoutMemo lockouts;                 // addresses the host API's brake holds off

  // Path, Host, Origin, method and drain rules for every request.
  RequestGate gate{RequestGateOptions{}};

  // Their parts of this state, built once by Wire() (after auth, router, tabs,
  // streams and ended are set); sessions keep a reference.
  void Wire();
  const TabServices& ForTab() const { return *tab_services; }
  const StreamServices& ForStream() const { return *stream_services; }
  std::optional<TabServices> tab_services;
  std::optional<StreamServices> stream_services;

  std::string RenderMetrics() const;

  // The operator endpoints: /healthz, /readyz (503 while draining or with no
  // router shard reachable), /metrics.
  struct OperatorAnswer {
    int status;
    absl::string_view content_type;
    std::string body;
  };
  OperatorAnswer AnswerOperator(absl::string_view path) const;
};

}  // namespace relay::gateway
