// relay-router: account -> tab routing and forwarding between gateways.
#include <thread>

#include <grpcpp/grpcpp.h>

#include "absl/synchronization/notification.h"

#include "absl/flags/flag.h"
#include "absl/synchronization/mutex.h"
#include "common/grpc/cq_loop.h"
#include "common/flags.h"
#include "common/grpc/grpc_server.h"
#include "common/grpc/grpc_tls.h"
#include "common/grpc/health_service.h"
#include "common/heap_trimmer.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/process_limits.h"
#include "common/scheduling.h"
#include "common/signals.h"
#include "router/net/gateway_links.h"
#include "router/rpc/admin_service.h"
#include "router/rpc/link_server.h"
#include "router/rpc/router_hub.h"

ABSL_FLAG(std::string, listen, "0.0.0.0:7001", "address:port to serve gRPC on");
ABSL_FLAG(std::string, link_listen, "0.0.0.0:7003",
          "address:port for the gateways' links (port 0: any; gateways learn it from OpenLink)");
ABSL_FLAG(std::string, metrics_listen, "", "address:port for /metrics and /healthz (off when empty)");
ABSL_FLAG(int64_t, max_sessions_per_account, 256,
          "session records per account; the least recently seen is forgotten beyond (its id stays valid)");
ABSL_FLAG(int64_t, max_inflight_per_account, 256,
          "calls in flight per account; beyond, a call fails at once with a reason");

int main(int argc, char** argv) {
  using namespace relay;
  common::BlockStopSignals();
  // absl::Mutex's deadlock detection builds a lock graph on every Lock; our
  // locks are leaves held briefly, and the graph cost a few percent of CPU.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  common::SetLogService("router");
  common::ParseFlagsWithEnv(argc, argv);
  // Before any thread starts, so that every one of them runs under the policy asked for.
  common::ApplySchedulingFlagAndLog();
  // Every connection is a descriptor: run with the most the system allows this process.
  common::RaiseOpenFileLimitAndLog();
  // What a burst of connections freed goes back to the system (common/heap_trimmer.h).
  common::HeapTrimmer heap_trimmer(absl::Seconds(2), 16 << 20);

  router::RouterCoreOptions options;
  options.max_inflight_per_account =
      static_cast<size_t>(std::max<int64_t>(1, absl::GetFlag(FLAGS_max_inflight_per_account)));
  options.sessions.max_sessions_per_account =
      static_cast<size_t>(std::max<int64_t>(1, absl::GetFlag(FLAGS_max_sessions_per_account)));
  router::RouterHub state(options);
  auto tls = common::ServiceTlsFromFlags();
  if (!tls.ok()) {
    common::Fatal(tls.status().message());
  }
  common::WarnIfPlaintext(*tls, "the gateways' links, Router.OpenLink and RouterAdmin");
  // The links run on a thread of their own; every gRPC service (off the hot
  // path) on another (common::CqLoop).
  auto gateway_links = router::GatewayLinks::Start(absl::GetFlag(FLAGS_link_listen), *tls, state);
  if (!gateway_links.ok()) {
    common::Fatal(gateway_links.status().message());
  }
  common::LogInfo("links listening", {{"port", static_cast<int64_t>((*gateway_links)->port())}});
  router::LinkServer links((*gateway_links)->port());
  router::RouterAdminService admin(state);
  common::HealthService health({"relay.v1.Router", "relay.v1.RouterAdmin"});
  // Reflection runs on gRPC's own threads: the links have a thread of their
  // own, and no call passes through gRPC any more (docs/decisions.md).
  common::EnableGrpcReflection();
  std::unique_ptr<grpc::ServerCompletionQueue> cq;
  auto server = common::StartGrpcServer(absl::GetFlag(FLAGS_listen),
                                        {links.service(), admin.service(), health.service()},
                                        {.default_health = false, .cq = &cq, .tls = &*tls});
  if (!server.ok()) {
    common::Fatal(server.status().message());
  }
  common::CqLoop loop(std::move(cq));
  links.Serve(loop);
  admin.Serve(loop);
  health.Serve(loop);
  loop.Start();
  common::LogListening(absl::GetFlag(FLAGS_listen), server->port);
  std::unique_ptr<common::MetricsServer> metrics;
  if (std::string listen = absl::GetFlag(FLAGS_metrics_listen); !listen.empty()) {
    auto started = common::MetricsServer::Start(listen, [&state] { return state.RenderMetrics(); });
    if (!started.ok()) {
      common::Fatal(started.status().message());
    }
    metrics = *std::move(started);
    common::LogInfo("metrics listening", {{"port", static_cast<int64_t>(metrics->port())}});
  }

  // Idle agent sessions stop counting after a minute; tabs hear of it.
  absl::Notification stop_sweeping;
  std::thread sweeper([&] {
    while (!stop_sweeping.WaitForNotificationWithTimeout(absl::Seconds(1))) {
      state.Sweep();
    }
  });

  common::WaitForStopSignal();
  // The sweeper may start link writes from its thread: it ends before the
  // loop shuts its queue down (no operation may start after that).
  stop_sweeping.Notify();
  sweeper.join();
  common::LogInfo("stopping");
  state.EndWatchers();
  (*gateway_links)->Stop();
  server->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  loop.Stop();
  return 0;
}
