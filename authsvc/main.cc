// relay-authsvc: the Auth gRPC service in front of the host API.
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <grpcpp/grpcpp.h>

#include "absl/flags/flag.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "authsvc/auth_service.h"
#include "authsvc/forget_hook.h"
#include "authsvc/host_api_client.h"
#include "common/clock.h"
#include "common/flags.h"
#include "common/grpc/grpc_server.h"
#include "common/grpc/grpc_tls.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/signals.h"
#include "common/secret_file.h"
#include "common/scheduling.h"

ABSL_FLAG(std::string, listen, "0.0.0.0:7002", "address:port to serve gRPC on");
ABSL_FLAG(std::string, metrics_listen, "", "address:port for /metrics and /healthz (off when empty)");
ABSL_FLAG(std::string, api_base, "http://127.0.0.1:8000/api/index.php",
          "the host API's base URL; routes are appended as ?r=ROUTE");
ABSL_FLAG(std::string, api_ca, "",
          "over https: PEM file of the CAs the host API's certificate must chain to "
          "(empty: the system's)");
ABSL_FLAG(std::string, relay_key_file, "", "file holding the relay key");
ABSL_FLAG(absl::Duration, verify_ttl, absl::Seconds(5), "how long a yes is cached (0: off)");
ABSL_FLAG(absl::Duration, negative_ttl, absl::Seconds(5), "how long a 401 is cached (0: off)");
ABSL_FLAG(absl::Duration, upstream_timeout, absl::Seconds(2), "host API request timeout");
ABSL_FLAG(int64_t, cache_size, 100000, "cached verifications at most (least recently used go)");
ABSL_FLAG(int, upstream_connections, 16, "concurrent requests to the host API at most");
ABSL_FLAG(int64_t, max_pending_upstream, 1024,
          "requests waiting for a host API connection at most; beyond, 503 at once");

int main(int argc, char** argv) {
  using namespace relay;
  common::BlockStopSignals();
  // absl::Mutex's deadlock detection builds a lock graph on every Lock; our
  // locks are leaves held briefly, and the graph cost a few percent of CPU.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  common::SetLogService("authsvc");
  common::ParseFlagsWithEnv(argc, argv);
  // Before any thread starts, so that every one of them runs under the policy asked for.
  common::ApplySchedulingFlagAndLog();

  auto key = common::ReadSecretFile(absl::GetFlag(FLAGS_relay_key_file));
  if (!key.ok()) {
    common::Fatal("relay key unavailable", {{"error", key.status().message()}});
  }
  boost::asio::io_context io(1);
  auto work = boost::asio::make_work_guard(io);
  authsvc::HostApiOptions options;
  options.api_base = absl::GetFlag(FLAGS_api_base);
  options.ca_file = absl::GetFlag(FLAGS_api_ca);
  options.relay_key = *key;  // also checks the host API's calls to POST /forget
  options.timeout = absl::GetFlag(FLAGS_upstream_timeout);
  options.max_connections = std::max(1, absl::GetFlag(FLAGS_upstream_connections));
  options.max_pending = static_cast<size_t>(std::max<int64_t>(0, absl::GetFlag(FLAGS_max_pending_upstream)));
  auto host_api = authsvc::NewHostApiClient(io, std::move(options));
  if (!host_api.ok()) {
    common::Fatal("bad --api_base", {{"error", host_api.status().message()}});
  }
  std::thread io_thread([&io] { io.run(); });

  authsvc::VerifyCacheOptions cache_options;
  cache_options.ttl = absl::GetFlag(FLAGS_verify_ttl);
  cache_options.negative_ttl = absl::GetFlag(FLAGS_negative_ttl);
  cache_options.capacity = static_cast<size_t>(std::max<int64_t>(0, absl::GetFlag(FLAGS_cache_size)));
  authsvc::VerifyCache cache(cache_options, [] { return common::MonotonicNow(); });
  authsvc::AuthService service(**host_api, cache);
  auto tls = common::ServiceTlsFromFlags();
  if (!tls.ok()) {
    common::Fatal(tls.status().message());
  }
  common::WarnIfPlaintext(*tls, "VerifyToken, RedeemTicket and Forget");
  common::EnableGrpcReflection();
  auto server = common::StartGrpcServer(absl::GetFlag(FLAGS_listen), {&service}, {.tls = &*tls});
  if (!server.ok()) {
    common::Fatal(server.status().message());
  }
  common::LogListening(absl::GetFlag(FLAGS_listen), server->port);
  std::unique_ptr<common::MetricsServer> metrics;
  if (std::string listen = absl::GetFlag(FLAGS_metrics_listen); !listen.empty()) {
    // Beside /metrics: POST /forget, the host API's revocation hook (forget_hook.h).
    auto started = common::MetricsServer::Start(
        listen, [&service] { return service.RenderMetrics(); },
        [&service, relay_key = *key](const common::OperatorRequest& request) {
          return authsvc::AnswerForgetHook(
              request, relay_key,
              [&service](const relay::v1::ForgetRequest& what) { return service.ForgetNow(what); },
              absl::Now());
        });
    if (!started.ok()) {
      common::Fatal(started.status().message());
    }
    metrics = *std::move(started);
    common::LogInfo("metrics listening", {{"port", static_cast<int64_t>(metrics->port())}});
  }

  // The revocation streams' beats: a gateway that hears nothing for a second
  // uses no verdict it keeps.
  absl::Notification stop_beating;
  std::thread beats([&] {
    while (!stop_beating.WaitForNotificationWithTimeout(absl::Milliseconds(250))) {
      service.Beat();
    }
  });

  common::WaitForStopSignal();
  common::LogInfo("stopping");
  stop_beating.Notify();
  beats.join();
  server->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  work.reset();
  io.stop();
  io_thread.join();
  return 0;
}
