// relay-gateway: MCP for agents and the tab protocol for tabs, over HTTP/1.1
// and WebSocket; gRPC inward to the router shards and authsvc.
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "absl/flags/flag.h"
#include "common/crypto.h"
#include "common/flags.h"
#include "common/grpc_server.h"
#include "common/log.h"
#include "common/signals.h"
#include "common/secret_file.h"
#include "gateway/catalogue.h"
#include "gateway/gateway_state.h"
#include "gateway/grpc_clients.h"
#include "gateway/listener.h"
#include "gateway/mcp_dispatcher.h"
#include "gateway/session_id.h"
#include "gateway/tab_registry.h"
#include "gateway/tab_session.h"

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

int main(int argc, char** argv) {
  using namespace relay;
  common::BlockStopSignals();
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
  std::vector<std::string> routers = common::SplitList(absl::GetFlag(FLAGS_router_addrs));
  if (routers.empty()) {
    common::Fatal("--router_addrs is empty");
  }

  gateway::SessionIdSigner signer(*std::move(secret));
  gateway::DispatchOptions dispatch_options;
  dispatch_options.call_timeout = absl::GetFlag(FLAGS_call_timeout);
  dispatch_options.no_tab_message = absl::GetFlag(FLAGS_no_tab_message);
  gateway::McpDispatcher dispatcher(signer, **catalogue, dispatch_options);

  gateway::GatewayState state;
  state.options.mcp_path = absl::GetFlag(FLAGS_mcp_path);
  state.options.allowed_origins = common::SplitList(absl::GetFlag(FLAGS_allowed_origins));
  state.options.allowed_hosts = common::SplitList(absl::GetFlag(FLAGS_allowed_hosts));
  state.gateway_id = common::HexEncode(common::RandomBytes(4));
  state.dispatcher = &dispatcher;

  gateway::TabRegistry tabs;
  auto auth = gateway::NewGrpcAuthClient(absl::GetFlag(FLAGS_authsvc_addr));
  auto router = gateway::NewGrpcRouterClient(routers, state.gateway_id, tabs);
  tabs.SetRouter(router.get());
  state.auth = auth.get();
  state.router = router.get();
  state.tabs = &tabs;

  int threads = std::max(1, absl::GetFlag(FLAGS_threads));
  boost::asio::io_context io(threads);
  auto listener = gateway::Listener::Create(io, absl::GetFlag(FLAGS_listen), state);
  if (!listener.ok()) {
    common::Fatal(listener.status().message());
  }
  common::LogListening(absl::GetFlag(FLAGS_listen), (*listener)->port());
  (*listener)->Run();

  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) {
    pool.emplace_back([&io] { io.run(); });
  }

  common::WaitForStopSignal();
  common::LogInfo("stopping");
  (*listener)->Stop();
  for (auto& tab : tabs.Snapshot()) {
    tab->PostGoingAway();
  }
  // Let the close frames go out; in-flight agent calls end with their tabs.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  io.stop();
  for (auto& thread : pool) {
    thread.join();
  }
  // gRPC callbacks may still be running on other threads: leave without
  // destroying what they point to.
  std::_Exit(0);
}
