// relay-gateway: MCP for agents and the tab protocol for tabs, over HTTP/1.1
// and WebSocket; gRPC inward to the router shards and authsvc.
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <grpcpp/completion_queue.h>

#include "absl/flags/flag.h"
#include "absl/synchronization/mutex.h"
#include "common/crypto.h"
#include "common/flags.h"
#include "common/cq_loop.h"
#include "common/grpc_server.h"
#include "common/log.h"
#include "common/signals.h"
#include "common/secret_file.h"
#include "gateway/catalogue.h"
#include "gateway/gateway_state.h"
#include "gateway/rpc/grpc_clients.h"
#include "gateway/listener.h"
#include "gateway/mcp_dispatcher.h"
#include "gateway/session_id.h"
#include "gateway/http_session.h"
#include "gateway/registry.h"
#include "gateway/router_commands.h"
#include "gateway/session_state.h"
#include "gateway/tab_session.h"
#include "gateway/trusted_proxies.h"

ABSL_FLAG(std::string, listen, "0.0.0.0:8080", "address:port to serve HTTP and WebSocket on");
ABSL_FLAG(std::string, metrics_listen, "", "unused: the gateway serves /metrics on --listen");
ABSL_FLAG(std::string, router_addrs, "127.0.0.1:7001", "comma-separated router shard addresses");
ABSL_FLAG(std::string, authsvc_addr, "127.0.0.1:7002", "authsvc address");
ABSL_FLAG(std::string, mcp_path, "/mcp", "the MCP and tab path");
ABSL_FLAG(std::string, allowed_origins, "", "comma-separated exact origins for tabs and agents");
ABSL_FLAG(std::string, allowed_hosts, "", "comma-separated Host names besides loopback");
ABSL_FLAG(std::string, catalogue, "", "path of the catalogue tools.json");
ABSL_FLAG(std::string, session_secret_file, "", "file with the secret that signs session ids");
ABSL_FLAG(std::string, trusted_proxies, "", "CIDRs whose X-Real-IP / X-Forwarded-For is believed");
ABSL_FLAG(absl::Duration, call_timeout, absl::Seconds(30), "deadline of one forwarded request");
ABSL_FLAG(std::string, no_tab_message, std::string(relay::gateway::kDefaultNoTabMessage),
          "what an agent is told when the account has no tab");
ABSL_FLAG(int, threads, 2, "I/O threads");
ABSL_FLAG(absl::Duration, drain_timeout, absl::Seconds(10),
          "on SIGTERM, how long calls in flight may take to finish before they get an error");
ABSL_FLAG(int64_t, max_body_bytes, 4 * 1024 * 1024, "largest agent request body (413 above)");
ABSL_FLAG(int64_t, max_tab_message_bytes, 16 * 1024 * 1024,
          "largest tab message (closed with 4413 above)");
ABSL_FLAG(int64_t, max_connections, 100000,
          "open connections (agents and tabs); beyond, new ones are closed at once");
ABSL_FLAG(absl::Duration, header_timeout, absl::Seconds(10),
          "time for a request's header (and a new connection's first request)");
ABSL_FLAG(absl::Duration, idle_timeout, absl::Seconds(120),
          "an idle keep-alive connection is closed after this");
ABSL_FLAG(int, max_json_depth, relay::gateway::kDefaultMaxJsonDepth,
          "deepest nesting of JSON accepted from agents and tabs");
ABSL_FLAG(absl::Duration, tab_ping_interval, absl::Seconds(25),
          "WebSocket ping interval; a tab that misses two is dropped");
ABSL_FLAG(absl::Duration, tab_hello_timeout, absl::Seconds(10), "time for a tab's relay/hello");
ABSL_FLAG(absl::Duration, sse_keepalive, absl::Seconds(15), "keep-alive comment interval on SSE");
ABSL_FLAG(absl::Duration, catalogue_poll, absl::Seconds(1), "how often the catalogue file is checked");

int main(int argc, char** argv) {
  using namespace relay;
  common::BlockStopSignals();
  // absl::Mutex's deadlock detection builds a lock graph on every Lock; our
  // locks are leaves held briefly, and the graph cost a few percent of CPU.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  common::SetLogService("gateway");
  common::ParseFlagsWithEnv(argc, argv);

  auto secret = common::ReadSecretFile(absl::GetFlag(FLAGS_session_secret_file));
  if (!secret.ok()) {
    common::Fatal("session secret unavailable", {{"error", secret.status().message()}});
  }
  auto catalogue = gateway::CatalogueFile::Open(absl::GetFlag(FLAGS_catalogue));
  if (!catalogue.ok()) {
    common::Fatal("catalogue unavailable", {{"error", catalogue.status().message()}});
  }
  auto proxies = gateway::TrustedProxies::Parse(common::SplitList(absl::GetFlag(FLAGS_trusted_proxies)));
  if (!proxies.ok()) {
    common::Fatal(proxies.status().message());
  }
  std::vector<std::string> routers = common::SplitList(absl::GetFlag(FLAGS_router_addrs));
  if (routers.empty()) {
    common::Fatal("--router_addrs is empty");
  }

  gateway::SessionIdSigner signer(*std::move(secret));
  gateway::EndedSessions ended;
  gateway::TouchThrottle touches;
  gateway::DispatchOptions dispatch_options;
  dispatch_options.call_timeout = absl::GetFlag(FLAGS_call_timeout);
  dispatch_options.max_json_depth = std::max(1, absl::GetFlag(FLAGS_max_json_depth));
  dispatch_options.no_tab_message = absl::GetFlag(FLAGS_no_tab_message);
  gateway::McpDispatcher dispatcher(signer, **catalogue, ended, dispatch_options);

  gateway::GatewayState state;
  state.gate = gateway::RequestGate({.mcp_path = absl::GetFlag(FLAGS_mcp_path),
                                     .allowed_origins =
                                         common::SplitList(absl::GetFlag(FLAGS_allowed_origins)),
                                     .allowed_hosts =
                                         common::SplitList(absl::GetFlag(FLAGS_allowed_hosts))});
  state.options.max_body_bytes = static_cast<size_t>(absl::GetFlag(FLAGS_max_body_bytes));
  state.options.max_tab_message_bytes =
      static_cast<size_t>(absl::GetFlag(FLAGS_max_tab_message_bytes));
  state.options.max_json_depth = dispatch_options.max_json_depth;
  state.options.max_connections = std::max<int64_t>(1, absl::GetFlag(FLAGS_max_connections));
  state.options.header_timeout = absl::GetFlag(FLAGS_header_timeout);
  state.options.idle_timeout = absl::GetFlag(FLAGS_idle_timeout);
  state.options.tab_idle_timeout = absl::GetFlag(FLAGS_tab_ping_interval) * 2;
  state.options.hello_timeout = absl::GetFlag(FLAGS_tab_hello_timeout);
  state.options.sse_keepalive = absl::GetFlag(FLAGS_sse_keepalive);
  state.gateway_id = common::HexEncode(common::RandomBytes(4));
  state.dispatcher = &dispatcher;
  state.ended = &ended;
  state.touches = &touches;
  state.proxies = &*proxies;

  gateway::Registry<gateway::TabSession> tabs;
  gateway::Registry<gateway::HttpSession> streams;
  gateway::RouterCommands commands(tabs, streams, ended);
  int threads = std::max(1, absl::GetFlag(FLAGS_threads));
  boost::asio::io_context io(threads);
  // Every gRPC completion of the gateway on one thread of its own.
  common::CqLoop grpc_loop(std::make_unique<grpc::CompletionQueue>());
  grpc_loop.Start();
  auto auth = gateway::NewGrpcAuthClient(absl::GetFlag(FLAGS_authsvc_addr), grpc_loop);
  auto router = gateway::NewGrpcRouterClient(
      routers, state.gateway_id, commands, grpc_loop,
      [&io](std::function<void()> fn) { boost::asio::post(io, std::move(fn)); });
  commands.SetReady();
  state.auth = auth.get();
  state.router = router.get();
  state.tabs = &tabs;
  state.streams = &streams;

  auto listener = gateway::Listener::Create(io, absl::GetFlag(FLAGS_listen), state);
  if (!listener.ok()) {
    common::Fatal(listener.status().message());
  }
  common::LogListening(absl::GetFlag(FLAGS_listen), (*listener)->port());
  common::LogInfo("gateway started", {{"gateway", state.gateway_id}});
  (*listener)->Run();

  // The catalogue file is re-read when it changes; every open stream hears of it.
  boost::asio::steady_timer catalogue_timer(io);
  std::function<void()> watch_catalogue = [&] {
    catalogue_timer.expires_after(absl::ToChronoMilliseconds(absl::GetFlag(FLAGS_catalogue_poll)));
    catalogue_timer.async_wait([&](boost::system::error_code ec) {
      if (ec) {
        return;
      }
      auto before = (*catalogue)->Get();
      auto changed = (*catalogue)->Refresh();
      if (!changed.ok()) {
        common::LogWarn("catalogue unreadable; keeping the last good one",
                        {{"error", changed.status().message()}});
      } else if (*changed) {
        auto after = (*catalogue)->Get();
        common::LogInfo("catalogue changed");
        std::vector<std::string> notices;
        if (before->tools != after->tools) {
          notices.push_back(R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})");
        }
        if (before->resources != after->resources ||
            before->resource_templates != after->resource_templates) {
          notices.push_back(R"({"jsonrpc":"2.0","method":"notifications/resources/list_changed"})");
        }
        if (before->prompts != after->prompts) {
          notices.push_back(R"({"jsonrpc":"2.0","method":"notifications/prompts/list_changed"})");
        }
        for (auto& stream : streams.Snapshot()) {
          for (const std::string& notice : notices) {
            stream->PostNotice(notice);
          }
        }
      }
      watch_catalogue();
    });
  };
  watch_catalogue();

  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) {
    pool.emplace_back([&io] { io.run(); });
  }

  common::WaitForStopSignal();
  // The drain (STYLE.md): stop accepting; new requests and tabs get 503 (any
  // gateway serves any session); each tab answers the calls it has and is
  // closed with 1001 once it has none; the calls of this gateway's agents
  // finish, up to --drain_timeout, when those left get a clear error.
  absl::Duration drain_timeout = absl::GetFlag(FLAGS_drain_timeout);
  common::LogInfo("draining", {{"calls", static_cast<int64_t>(router->CallsInFlight())},
                               {"tabs", static_cast<int64_t>(tabs.size())},
                               {"timeout_ms", absl::ToInt64Milliseconds(drain_timeout)}});
  state.draining.store(true);
  (*listener)->Stop();
  boost::asio::post(io, [&catalogue_timer] { catalogue_timer.cancel(); });
  for (auto& tab : tabs.Snapshot()) {
    tab->PostDrain();
  }
  auto wait_until = [](absl::Time deadline, const std::function<bool()>& done) {
    // Shutdown only: a short poll is simpler than a signal from every session.
    while (!done() && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    return done();
  };
  bool drained = wait_until(absl::Now() + drain_timeout, [&] {
    return router->CallsInFlight() == 0 && tabs.size() == 0;
  });
  if (!drained) {
    common::LogWarn("drain deadline passed; ending what is left",
                    {{"calls", static_cast<int64_t>(router->CallsInFlight())},
                     {"tabs", static_cast<int64_t>(tabs.size())}});
    router->CancelAll(gateway::RouterClient::CancelReason::kShutdown);
  }
  for (auto& tab : tabs.Snapshot()) {
    tab->PostGoingAway();
  }
  for (auto& stream : streams.Snapshot()) {
    stream->PostGoingAway();
  }
  // Let the last answers and close frames go out (a second at most).
  wait_until(absl::Now() + absl::Seconds(1),
             [&] { return tabs.size() == 0 && streams.size() == 0; });
  if (!drained) {
    // The error answers CancelAll posted are written on the I/O threads.
    absl::SleepFor(absl::Milliseconds(100));
  }
  common::LogInfo("stopped", {{"drained", drained}});
  io.stop();
  for (auto& thread : pool) {
    thread.join();
  }
  // gRPC completions may still be running on the loop thread: leave without
  // destroying what they point to.
  std::_Exit(0);
}
