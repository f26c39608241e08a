// relayctl's commands on authsvc: auth forget (drops cached verifications at once, e.g. after
// revoking a token in the host API without waiting for --verify_ttl) and auth stats.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>

#include "absl/strings/ascii.h"
#include "nlohmann/json.hpp"
#include "relay/v1/auth.grpc.pb.h"
#include "relayctl/commands.h"

namespace relay::relayctl {

namespace {

// Calls one Auth method on authsvc with a 5 s deadline; says why it failed.
template <typename Request, typename Response, typename Method>
bool CallAuthsvc(const Authsvc& authsvc, Method method, const Request& request,
                 Response* response) {
  auto stub = v1::Auth::NewStub(authsvc.channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::Status status = ((*stub).*method)(&context, request, response);
  if (!status.ok()) {
    std::cerr << "relayctl: authsvc " << authsvc.address
              << " did not answer: " << status.error_message() << "\n";
  }
  return status.ok();
}

}  // namespace

int AuthForget(const Authsvc& authsvc, const std::string& user, const std::string& hash,
               bool json) {
  if (user.empty() == hash.empty()) {
    std::cerr << "relayctl auth forget: give exactly one of --user or --token_sha256\n";
    return kExitUsage;
  }
  v1::ForgetRequest request;
  if (!user.empty()) {
    request.set_user(user);
  } else {
    // As sha256sum prints it, or in capitals: the same hash.
    request.set_token_sha256(absl::AsciiStrToLower(hash));
  }
  v1::ForgetResponse response;
  if (!CallAuthsvc(authsvc, &v1::Auth::Stub::Forget, request, &response)) {
    return kExitFailed;
  }
  if (json) {
    std::cout << nlohmann::json{{"dropped", response.dropped()}}.dump() << "\n";
  } else {
    std::cout << "dropped " << response.dropped() << " cached verification(s)\n";
  }
  return 0;
}

int AuthStats(const Authsvc& authsvc, bool json) {
  v1::AuthStats r;
  if (!CallAuthsvc(authsvc, &v1::Auth::Stub::GetStats, v1::GetAuthStatsRequest(), &r)) {
    return kExitFailed;
  }
  nlohmann::json out = {
      {"cacheEntries", r.cache_entries()},
      {"hits", r.hits()},
      {"negativeHits", r.negative_hits()},
      {"misses", r.misses()},
      {"coalesced", r.coalesced()},
      {"verifyRequests", r.verify_requests()},
      {"redeemRequests", r.redeem_requests()},
      {"upstreamRequests", r.upstream_requests()},
      {"upstreamLatencyAvgMs", r.upstream_latency_avg_ms()},
      {"upstreamLatencyP99Ms", r.upstream_latency_p99_ms()},
      {"errors",
       {{"unreachable", r.errors_unreachable()},
        {"badAnswer", r.errors_bad_answer()},
        {"queueFull", r.errors_queue_full()}}},
      {"revocationWatchers", r.revocation_watchers()}};
  if (json) {
    std::cout << out.dump() << "\n";
    return kExitOk;
  }
  std::printf("cache       %llu entries; %llu hits, %llu negative hits, %llu misses, %llu coalesced\n",
              static_cast<unsigned long long>(r.cache_entries()),
              static_cast<unsigned long long>(r.hits()),
              static_cast<unsigned long long>(r.negative_hits()),
              static_cast<unsigned long long>(r.misses()),
              static_cast<unsigned long long>(r.coalesced()));
  std::printf("requests    %llu verify, %llu redeem\n",
              static_cast<unsigned long long>(r.verify_requests()),
              static_cast<unsigned long long>(r.redeem_requests()));
  std::printf("host API    %llu requests; latency avg %.1f ms, p99 <= %.1f ms\n",
              static_cast<unsigned long long>(r.upstream_requests()), r.upstream_latency_avg_ms(),
              r.upstream_latency_p99_ms());
  std::printf("errors      %llu unreachable, %llu bad answers, %llu refused (queue full)\n",
              static_cast<unsigned long long>(r.errors_unreachable()),
              static_cast<unsigned long long>(r.errors_bad_answer()),
              static_cast<unsigned long long>(r.errors_queue_full()));
  std::printf("gateways    %u watching revocations\n", r.revocation_watchers());
  return kExitOk;
}

}  // namespace relay::relayctl
