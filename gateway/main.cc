// relay-gateway: MCP for agents and the tab protocol for tabs, over HTTP/1.1
// and WebSocket; gRPC inward to the router shards and authsvc.
#include <cstdlib>

#include "absl/flags/flag.h"
#include "absl/synchronization/mutex.h"
#include "common/flags.h"
#include "common/grpc/grpc_tls.h"
#include "common/heap_trimmer.h"
#include "common/log.h"
#include "common/process_limits.h"
#include "common/scheduling.h"
#include "common/secret_file.h"
#include "common/signals.h"
#include "gateway/gateway.h"

ABSL_FLAG(std::string, listen, "0.0.0.0:8080", "address:port to serve HTTP and WebSocket on");
ABSL_FLAG(std::string, metrics_listen, "", "unused: the gateway serves /metrics on --listen");
ABSL_FLAG(std::string, router_addrs, "127.0.0.1:7001", "comma-separated router shard addresses");
ABSL_FLAG(std::string, authsvc_addr, "127.0.0.1:7002", "authsvc address");
ABSL_FLAG(std::string, mcp_path, "/mcp", "the MCP and tab path");
ABSL_FLAG(std::string, allowed_origins, "", "comma-separated exact origins for tabs and agents");
ABSL_FLAG(std::string, allowed_hosts, "", "comma-separated Host names besides loopback");
ABSL_FLAG(std::string, public_url, "",
          "the relay's canonical URL as agents reach it (e.g. https://relay.example.org/mcp, the "
          "load balancer's, never a pod's); with --authorization_server, agents sign in");
ABSL_FLAG(std::string, authorization_server, "",
          "the host application's OAuth issuer URL; with --public_url, the relay serves its "
          "protected resource metadata and every 401 points there");
ABSL_FLAG(std::string, catalogue, "", "path of the catalogue tools.json");
ABSL_FLAG(std::string, session_secret_file, "",
          "file with the secret that signs session ids, requestStates and tabs' resume "
          "credentials");
ABSL_FLAG(std::string, trusted_proxies, "", "CIDRs whose X-Real-IP / X-Forwarded-For is believed");
ABSL_FLAG(absl::Duration, call_timeout, absl::Seconds(30), "deadline of one forwarded request");
ABSL_FLAG(bool, modern_era, true,
          "serve MCP 2026-07-28 (server/discover, stateless requests, multi round-trip requests, "
          "subscriptions/listen) beside the 2025 revisions on the same URL; --nomodern_era "
          "answers server/discover -32601 so that every client falls back to the 2025 era");
ABSL_FLAG(std::string, no_tab_message, std::string(relay::gateway::kDefaultNoTabMessage),
          "what an agent is told when the account has no tab");
ABSL_FLAG(int, threads, 1,
          "I/O threads, each with connections of its own; more give one gateway more cores");
ABSL_FLAG(absl::Duration, drain_timeout, absl::Seconds(10),
          "on SIGTERM, how long calls in flight may take to finish before they get an error");
ABSL_FLAG(int64_t, max_body_bytes, 4 * 1024 * 1024, "largest agent request body (413 above)");
ABSL_FLAG(int64_t, max_tab_message_bytes, 16 * 1024 * 1024,
          "largest tab message (closed with 4413 above)");
ABSL_FLAG(int64_t, max_connections, 0,
          "open connections (agents and tabs); beyond, a new one is answered 503 and closed. 0: "
          "the open-file limit less 256 kept for the gateway itself");
ABSL_FLAG(absl::Duration, header_timeout, absl::Seconds(10),
          "time for a request's header (and a new connection's first request)");
ABSL_FLAG(absl::Duration, idle_timeout, absl::Seconds(120),
          "an idle keep-alive connection is closed after this");
ABSL_FLAG(int, max_json_depth, relay::gateway::kDefaultMaxJsonDepth,
          "deepest nesting of JSON accepted from agents and tabs");
ABSL_FLAG(absl::Duration, tab_ping_interval, absl::Seconds(25),
          "WebSocket ping interval; a tab that misses two is dropped (at most 2m: each ping's "
          "turn also renews the tab's resume credential)");
ABSL_FLAG(absl::Duration, tab_hello_timeout, absl::Seconds(10), "time for a tab's relay/hello");
ABSL_FLAG(absl::Duration, sse_keepalive, absl::Seconds(15), "keep-alive comment interval on SSE");
ABSL_FLAG(absl::Duration, start_link_wait, absl::Seconds(5),
          "before it listens, how long a starting gateway waits for its links to every router "
          "shard (a load balancer's first requests then find them up)");
ABSL_FLAG(absl::Duration, catalogue_poll, absl::Seconds(1), "how often the catalogue file is checked");

int main(int argc, char** argv) {
  using namespace relay;
  common::BlockStopSignals();
  // absl::Mutex's deadlock detection builds a lock graph on every Lock; our
  // locks are leaves held briefly, and the graph cost a few percent of CPU.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  common::SetLogService("gateway");
  common::ParseFlagsWithEnv(argc, argv);
  // Before any thread starts, so that every one of them runs under the policy asked for.
  common::ApplySchedulingFlagAndLog();
  // Every connection is a descriptor: run with the most the system allows this process.
  const uint64_t descriptor_limit = common::RaiseOpenFileLimitAndLog();
  // What a burst of connections freed goes back to the system (common/heap_trimmer.h).
  common::HeapTrimmer heap_trimmer(absl::Seconds(2), 4 << 20);

  gateway::GatewayConfig config;
  config.listen = absl::GetFlag(FLAGS_listen);
  config.routers = common::SplitList(absl::GetFlag(FLAGS_router_addrs));
  config.authsvc = absl::GetFlag(FLAGS_authsvc_addr);
  auto tls = common::ServiceTlsFromFlags();
  if (!tls.ok()) {
    common::Fatal(tls.status().message());
  }
  config.grpc_tls = *std::move(tls);
  common::WarnIfPlaintext(config.grpc_tls, "the links to the routers and authsvc");
  auto secret = common::ReadSecretFile(absl::GetFlag(FLAGS_session_secret_file));
  if (!secret.ok()) {
    common::Fatal("session secret unavailable", {{"error", secret.status().message()}});
  }
  config.session_secret = *std::move(secret);
  config.catalogue_path = absl::GetFlag(FLAGS_catalogue);
  config.trusted_proxies = common::SplitList(absl::GetFlag(FLAGS_trusted_proxies));
  auto resource = gateway::ProtectedResource::Make(absl::GetFlag(FLAGS_public_url),
                                                   absl::GetFlag(FLAGS_authorization_server),
                                                   absl::GetFlag(FLAGS_mcp_path));
  if (!resource.ok()) {
    common::Fatal(resource.status().message());
  }
  config.gate = {.mcp_path = absl::GetFlag(FLAGS_mcp_path),
                 .allowed_origins = common::SplitList(absl::GetFlag(FLAGS_allowed_origins)),
                 .allowed_hosts = common::SplitList(absl::GetFlag(FLAGS_allowed_hosts)),
                 .resource = *std::move(resource)};
  config.dispatch.call_timeout = absl::GetFlag(FLAGS_call_timeout);
  config.dispatch.modern_era = absl::GetFlag(FLAGS_modern_era);
  config.dispatch.max_json_depth = std::max(1, absl::GetFlag(FLAGS_max_json_depth));
  config.dispatch.no_tab_message = absl::GetFlag(FLAGS_no_tab_message);
  gateway::GatewayOptions& options = config.options;
  options.max_body_bytes = static_cast<size_t>(absl::GetFlag(FLAGS_max_body_bytes));
  options.max_tab_message_bytes = static_cast<size_t>(absl::GetFlag(FLAGS_max_tab_message_bytes));
  // Past the descriptor limit a connection cannot even be accepted: it waits in the listen
  // queue, unanswered, while the listener backs off (docs/decisions.md, "The connection cap
  // follows the descriptor limit").
  options.max_connections = absl::GetFlag(FLAGS_max_connections) > 0
                                ? absl::GetFlag(FLAGS_max_connections)
                                : common::ConnectionsWithin(descriptor_limit);
  options.header_timeout = absl::GetFlag(FLAGS_header_timeout);
  options.idle_timeout = absl::GetFlag(FLAGS_idle_timeout);
  // The keep-alive's turn renews a live tab's resume credential once it is half its lifetime
  // old: a longer interval would let the tab's credential lapse while it is connected.
  if (absl::GetFlag(FLAGS_tab_ping_interval) > absl::Minutes(2) ||
      absl::GetFlag(FLAGS_tab_ping_interval) <= absl::ZeroDuration()) {
    common::Fatal("--tab_ping_interval must be above 0 and at most 2m");
  }
  options.tab_idle_timeout = absl::GetFlag(FLAGS_tab_ping_interval) * 2;
  options.hello_timeout = absl::GetFlag(FLAGS_tab_hello_timeout);
  options.sse_keepalive = absl::GetFlag(FLAGS_sse_keepalive);
  config.threads = absl::GetFlag(FLAGS_threads);
  config.drain_timeout = absl::GetFlag(FLAGS_drain_timeout);
  config.catalogue_poll = absl::GetFlag(FLAGS_catalogue_poll);
  config.start_link_wait = absl::GetFlag(FLAGS_start_link_wait);
  const int64_t max_connections = options.max_connections;

  auto gateway = gateway::Gateway::Start(std::move(config));
  if (!gateway.ok()) {
    common::Fatal(gateway.status().message());
  }
  common::LogListening(absl::GetFlag(FLAGS_listen), (*gateway)->port());
  common::LogInfo("gateway started",
                  {{"gateway", (*gateway)->id()}, {"max_connections", max_connections}});

  common::WaitForStopSignal();
  (*gateway)->Drain();
  // Everything is answered or closed: leave at once (the Gateway's orderly
  // teardown would only wait for links and streams no one needs now).
  std::_Exit(0);
}
