// relayctl: the operators' command line for the router (and, later, authsvc).
#include <cstdio>
#include <iostream>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/time/time.h"
#include "common/flags.h"
#include "nlohmann/json.hpp"
#include "relay/v1/router.grpc.pb.h"

ABSL_FLAG(std::string, router, "127.0.0.1:7001", "router address");
ABSL_FLAG(bool, json, false, "machine-readable output");

namespace {

int ListTabs() {
  auto stub = relay::v1::RouterAdmin::NewStub(
      grpc::CreateChannel(absl::GetFlag(FLAGS_router), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  relay::v1::ListTabsRequest request;
  relay::v1::ListTabsResponse response;
  grpc::Status status = stub->ListTabs(&context, request, &response);
  if (!status.ok()) {
    std::cerr << "relayctl: router " << absl::GetFlag(FLAGS_router)
              << " did not answer: " << status.error_message() << "\n";
    return 1;
  }
  if (absl::GetFlag(FLAGS_json)) {
    nlohmann::json tabs = nlohmann::json::array();
    for (const auto& tab : response.tabs()) {
      tabs.push_back({{"account", tab.account()},
                      {"role", tab.role()},
                      {"gateway", tab.gateway_id()},
                      {"tabId", tab.tab_id()},
                      {"client", tab.client_name()},
                      {"clientVersion", tab.client_version()},
                      {"connectedAtMs", tab.connected_at_unix_ms()},
                      {"callsInFlight", tab.calls_in_flight()}});
    }
    std::cout << tabs.dump() << "\n";
    return 0;
  }
  std::printf("%-24s %-10s %-10s %-20s %s\n", "ACCOUNT", "GATEWAY", "TAB", "CLIENT", "IN FLIGHT");
  for (const auto& tab : response.tabs()) {
    std::printf("%-24s %-10s %-10llu %-20s %llu\n", tab.account().c_str(),
                tab.gateway_id().c_str(), static_cast<unsigned long long>(tab.tab_id()),
                tab.client_name().c_str(),
                static_cast<unsigned long long>(tab.calls_in_flight()));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("relayctl [--router ADDR] [--json] tabs");
  auto args = relay::common::ParseFlagsWithEnv(argc, argv);
  if (args.size() >= 2 && std::string(args[1]) == "tabs") {
    return ListTabs();
  }
  std::cerr << "usage: relayctl [--router ADDR] [--json] tabs\n"
               "(sessions, stats, watch, kick and end-session come with later issues)\n";
  return 2;
}
