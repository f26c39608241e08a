// relayctl: the operators' command line for the router (and, later, authsvc).
#include <cstdio>
#include <iostream>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/time/time.h"
#include "common/flags.h"
#include "common/grpc_tls.h"
#include "common/text.h"
#include "nlohmann/json.hpp"
#include "relay/v1/auth.grpc.pb.h"
#include "relay/v1/router.grpc.pb.h"

ABSL_FLAG(std::string, router, "127.0.0.1:7001", "router address");
ABSL_FLAG(std::string, authsvc, "127.0.0.1:7002", "authsvc address");
ABSL_FLAG(bool, json, false, "machine-readable output");
ABSL_FLAG(std::string, user, "", "auth forget: the account whose cached verifications go");
ABSL_FLAG(std::string, token_sha256, "",
          "auth forget: SHA-256 (hex) of the token whose cached verification goes");

namespace {

// Every text cell of a table came from outside (accounts from the host API,
// client names from tabs): escaped, so that it cannot drive the terminal.
std::string Cell(const std::string& text) { return relay::common::EscapeForTerminal(text); }

// The operator certificate (--grpc_tls_*), read once at start.
relay::common::GrpcTls g_tls;

std::shared_ptr<grpc::Channel> ChannelTo(const std::string& address) {
  return grpc::CreateChannel(address, relay::common::ChannelCredentials(g_tls));
}

std::unique_ptr<relay::v1::RouterAdmin::Stub> Router() {
  return relay::v1::RouterAdmin::NewStub(ChannelTo(absl::GetFlag(FLAGS_router)));
}

// Calls one RouterAdmin method with a 5 s deadline; prints why it failed.
template <typename Request, typename Response, typename Method>
bool CallRouter(Method method, const Request& request, Response* response) {
  auto stub = Router();
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::Status status = ((*stub).*method)(&context, request, response);
  if (!status.ok()) {
    std::cerr << "relayctl: router " << absl::GetFlag(FLAGS_router)
              << " did not answer: " << status.error_message() << "\n";
  }
  return status.ok();
}

int ListSessions() {
  relay::v1::ListSessionsResponse response;
  if (!CallRouter(&relay::v1::RouterAdmin::Stub::ListSessions, relay::v1::ListSessionsRequest(),
                  &response)) {
    return 1;
  }
  if (absl::GetFlag(FLAGS_json)) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& s : response.sessions()) {
      out.push_back({{"session", s.session_id()}, {"account", s.account()},
                     {"agent", s.counts_as_agent()}, {"stream", s.has_stream()},
                     {"subscriptions", s.subscriptions()}, {"lastSeenMs", s.last_seen_unix_ms()}});
    }
    std::cout << out.dump() << "\n";
    return 0;
  }
  std::printf("%-24s %-6s %-7s %-5s %s\n", "ACCOUNT", "AGENT", "STREAM", "SUBS", "SESSION");
  for (const auto& s : response.sessions()) {
    std::printf("%-24s %-6s %-7s %-5u %s\n", Cell(s.account()).c_str(),
                s.counts_as_agent() ? "yes" : "no", s.has_stream() ? "open" : "-",
                s.subscriptions(), Cell(s.session_id()).c_str());
  }
  return 0;
}

int Stats() {
  relay::v1::GetStatsResponse r;
  if (!CallRouter(&relay::v1::RouterAdmin::Stub::GetStats, relay::v1::GetStatsRequest(), &r)) {
    return 1;
  }
  nlohmann::json out = {{"links", r.links()},     {"tabs", r.tabs()},         {"sessions", r.sessions()},
                        {"forwards", r.forwards()}, {"results", r.results()}, {"errors", r.errors()},
                        {"noTab", r.no_tab()},     {"tabGone", r.tab_gone()}, {"displaced", r.displaced()},
                        {"cancelled", r.cancelled()}};
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << out.dump() << "\n";
    return 0;
  }
  for (const auto& [key, value] : out.items()) {
    std::printf("%-10s %s\n", key.c_str(), value.dump().c_str());
  }
  return 0;
}

int Kick(const std::string& account) {
  relay::v1::KickRequest request;
  request.set_account(account);
  relay::v1::KickResponse response;
  if (!CallRouter(&relay::v1::RouterAdmin::Stub::Kick, request, &response)) {
    return 1;
  }
  std::cout << (response.kicked() ? "disconnected the tab of " : "no tab here for ") << account
            << "\n";
  return response.kicked() ? 0 : 1;
}

int EndSession(const std::string& session) {
  relay::v1::EndSessionRequest request;
  request.set_session_id(session);
  relay::v1::EndSessionResponse response;
  if (!CallRouter(&relay::v1::RouterAdmin::Stub::EndSession, request, &response)) {
    return 1;
  }
  std::cout << "ended the session\n";
  return 0;
}

int ListTabs() {
  relay::v1::ListTabsResponse response;
  if (!CallRouter(&relay::v1::RouterAdmin::Stub::ListTabs, relay::v1::ListTabsRequest(),
                  &response)) {
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
    std::printf("%-24s %-10s %-10llu %-20s %llu\n", Cell(tab.account()).c_str(),
                Cell(tab.gateway_id()).c_str(), static_cast<unsigned long long>(tab.tab_id()),
                Cell(tab.client_name()).c_str(),
                static_cast<unsigned long long>(tab.calls_in_flight()));
  }
  return 0;
}

// Drops cached verifications at once, e.g. after revoking a token in the host
// API without waiting for --verify_ttl.
int AuthForget() {
  std::string user = absl::GetFlag(FLAGS_user);
  std::string hash = absl::GetFlag(FLAGS_token_sha256);
  if (user.empty() == hash.empty()) {
    std::cerr << "relayctl auth forget: give exactly one of --user or --token_sha256\n";
    return 2;
  }
  auto stub = relay::v1::Auth::NewStub(ChannelTo(absl::GetFlag(FLAGS_authsvc)));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  relay::v1::ForgetRequest request;
  if (!user.empty()) {
    request.set_user(user);
  } else {
    request.set_token_sha256(hash);
  }
  relay::v1::ForgetResponse response;
  grpc::Status status = stub->Forget(&context, request, &response);
  if (!status.ok()) {
    std::cerr << "relayctl: authsvc " << absl::GetFlag(FLAGS_authsvc)
              << " did not answer: " << status.error_message() << "\n";
    return 1;
  }
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << nlohmann::json{{"dropped", response.dropped()}}.dump() << "\n";
  } else {
    std::cout << "dropped " << response.dropped() << " cached verification(s)\n";
  }
  return 0;
}

constexpr char kUsage[] =
    "usage: relayctl [--router ADDR] [--json] (tabs | sessions | stats)\n"
    "       relayctl [--router ADDR] kick ACCOUNT\n"
    "       relayctl [--router ADDR] end-session SESSION_ID\n"
    "       relayctl [--authsvc ADDR] auth forget (--user NAME | --token_sha256 HEX)\n"
    "With mutual TLS: --grpc_tls_ca CA.pem --grpc_tls_cert operator.pem --grpc_tls_key operator.key\n";

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(kUsage);
  auto args = relay::common::ParseFlagsWithEnv(argc, argv);
  std::vector<std::string> words(args.begin() + 1, args.end());
  auto tls = relay::common::GrpcTlsFromFlags();
  if (!tls.ok()) {
    std::cerr << "relayctl: " << tls.status().message() << "\n";
    return 2;
  }
  g_tls = *std::move(tls);
  if (words == std::vector<std::string>{"tabs"}) {
    return ListTabs();
  }
  if (words == std::vector<std::string>{"sessions"}) {
    return ListSessions();
  }
  if (words == std::vector<std::string>{"stats"}) {
    return Stats();
  }
  if (words.size() == 2 && words[0] == "kick") {
    return Kick(words[1]);
  }
  if (words.size() == 2 && words[0] == "end-session") {
    return EndSession(words[1]);
  }
  if (words == std::vector<std::string>{"auth", "forget"}) {
    return AuthForget();
  }
  std::cerr << kUsage;
  return 2;
}
