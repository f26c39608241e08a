// relayctl: the operators' command line for the router shards and authsvc.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/flags.h"
#include "common/grpc_tls.h"
#include "common/text.h"
#include "gateway/core/shard_picker.h"
#include "relayctl/reflect.h"
#include "nlohmann/json.hpp"
#include "relay/v1/auth.grpc.pb.h"
#include "relay/v1/router.grpc.pb.h"

ABSL_FLAG(std::string, router, "",
          "router shard addresses, comma-separated, as the gateways list them (default: "
          "RELAY_ROUTER_ADDRS, else 127.0.0.1:7001)");
ABSL_FLAG(bool, per_shard, false, "stats: each shard's figures beside the sum");
ABSL_FLAG(std::string, account, "", "sessions: only this account's");
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

// The router shards, in the order the gateways list them (rendezvous hashing
// over these exact strings decides which shard owns an account).
std::vector<std::string> Shards() {
  std::string list = absl::GetFlag(FLAGS_router);
  if (list.empty()) {
    const char* env = std::getenv("RELAY_ROUTER_ADDRS");
    list = env != nullptr && *env != '\0' ? env : "127.0.0.1:7001";
  }
  std::vector<std::string> shards = relay::common::SplitList(list);
  if (shards.empty()) {
    std::cerr << "relayctl: no router address; give --router A,B,... or RELAY_ROUTER_ADDRS\n";
    std::exit(2);
  }
  return shards;
}

// Exit codes: every shard answered; some did not (the answer is partial);
// none did, or the request failed.
constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitPartial = 3;

template <typename Response>
struct ShardAnswer {
  std::string shard;
  Response response;
};

template <typename Response>
struct Answers {
  std::vector<ShardAnswer<Response>> answered;
  std::vector<std::string> failed;
  int exit_code() const {
    return failed.empty() ? kExitOk : answered.empty() ? kExitFailed : kExitPartial;
  }
};

// Calls one RouterAdmin method on one shard with a 5 s deadline; says why it failed.
template <typename Request, typename Response, typename Method>
bool CallShard(const std::string& shard, Method method, const Request& request,
               Response* response) {
  auto stub = relay::v1::RouterAdmin::NewStub(ChannelTo(shard));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::Status status = ((*stub).*method)(&context, request, response);
  if (!status.ok()) {
    std::cerr << "relayctl: router " << shard << " did not answer: " << status.error_message()
              << "\n";
  }
  return status.ok();
}

// Asks every shard; the answer is partial when one did not answer (named on stderr).
template <typename Response, typename Request, typename Method>
Answers<Response> AskAll(Method method, const Request& request) {
  Answers<Response> answers;
  for (const std::string& shard : Shards()) {
    Response response;
    if (CallShard(shard, method, request, &response)) {
      answers.answered.push_back({shard, std::move(response)});
    } else {
      answers.failed.push_back(shard);
    }
  }
  if (!answers.failed.empty() && !answers.answered.empty()) {
    std::cerr << "relayctl: partial answer: " << answers.failed.size() << " of "
              << answers.failed.size() + answers.answered.size()
              << " router shards did not answer\n";
  }
  return answers;
}

// The shard that owns the account, as the gateways pick it.
std::string OwnerOf(absl::string_view account) {
  std::vector<std::string> shards = Shards();
  return shards[relay::gateway::ShardPicker(shards).Pick(account)];
}

// A watch event's kind as people and scripts read it: "tab_up", ...
std::string KindName(relay::v1::WatchEvent::Kind kind) {
  return absl::AsciiStrToLower(relay::v1::WatchEvent::Kind_Name(kind));
}

std::string WatchJson(const std::string& shard, const relay::v1::WatchEvent& e) {
  nlohmann::json out = {{"at", e.at_unix_ms()}, {"kind", KindName(e.kind())}, {"shard", shard}};
  auto put = [&out](const char* key, const std::string& value) {
    if (!value.empty()) {
      out[key] = value;
    }
  };
  put("account", e.account());
  put("gateway", e.gateway_id());
  if (e.tab_id() != 0) {
    out["tabId"] = e.tab_id();
  }
  put("session", e.session_id());
  put("call", e.trace_id());
  put("client", e.client());
  put("reason", e.reason());
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// "03:04:05.678  tab_up          alice                 gateway=... tab=5  [shard]"
std::string WatchLine(const std::string& shard, const relay::v1::WatchEvent& e) {
  std::string details;
  auto put = [&details](const char* key, const std::string& value) {
    if (!value.empty()) {
      absl::StrAppend(&details, key, "=", Cell(value), " ");
    }
  };
  put("gateway", e.gateway_id());
  put("tab", e.tab_id() != 0 ? std::to_string(e.tab_id()) : "");
  put("session", e.session_id());
  put("call", e.trace_id());
  put("client", e.client());
  if (!e.reason().empty()) {
    absl::StrAppend(&details, "(", Cell(e.reason()), ") ");
  }
  char head[96];
  std::snprintf(head, sizeof(head), "%-12s  %-14s  %-20s  ",
                absl::FormatTime("%H:%M:%E3S", absl::FromUnixMillis(e.at_unix_ms()),
                                 absl::UTCTimeZone())
                    .c_str(),
                KindName(e.kind()).c_str(), Cell(e.account()).c_str());
  return absl::StrCat(head, details, "[", Cell(shard), "]");
}

int ListSessions() {
  relay::v1::ListSessionsRequest request;
  request.set_account(absl::GetFlag(FLAGS_account));
  auto answers = AskAll<relay::v1::ListSessionsResponse>(
      &relay::v1::RouterAdmin::Stub::ListSessions, request);
  bool json = absl::GetFlag(FLAGS_json);
  nlohmann::json out = nlohmann::json::array();
  if (!json) {
    std::printf("%-24s %-6s %-7s %-5s %-22s %s\n", "ACCOUNT", "AGENT", "STREAM", "SUBS", "SHARD",
                "SESSION");
  }
  for (const auto& [shard, response] : answers.answered) {
    for (const auto& s : response.sessions()) {
      if (json) {
        out.push_back({{"session", s.session_id()}, {"account", s.account()},
                       {"agent", s.counts_as_agent()}, {"stream", s.has_stream()},
                       {"subscriptions", s.subscriptions()},
                       {"lastSeenMs", s.last_seen_unix_ms()}, {"shard", shard}});
      } else {
        std::printf("%-24s %-6s %-7s %-5u %-22s %s\n", Cell(s.account()).c_str(),
                    s.counts_as_agent() ? "yes" : "no", s.has_stream() ? "open" : "-",
                    s.subscriptions(), Cell(shard).c_str(), Cell(s.session_id()).c_str());
      }
    }
  }
  if (json) {
    std::cout << out.dump() << "\n";
  }
  return answers.exit_code();
}

nlohmann::json StatsJson(const relay::v1::GetStatsResponse& r) {
  return {{"links", r.links()},       {"tabs", r.tabs()},         {"sessions", r.sessions()},
          {"forwards", r.forwards()}, {"results", r.results()},   {"errors", r.errors()},
          {"noTab", r.no_tab()},      {"tabGone", r.tab_gone()},  {"displaced", r.displaced()},
          {"cancelled", r.cancelled()}};
}

int Stats() {
  auto answers =
      AskAll<relay::v1::GetStatsResponse>(&relay::v1::RouterAdmin::Stub::GetStats,
                                          relay::v1::GetStatsRequest());
  // Summed over the shards; links are per shard (every gateway links to every shard), so
  // the sum counts each gateway once per shard.
  nlohmann::json total = StatsJson(relay::v1::GetStatsResponse());
  nlohmann::json shards = nlohmann::json::object();
  for (const auto& [shard, response] : answers.answered) {
    nlohmann::json one = StatsJson(response);
    for (auto& [key, value] : total.items()) {
      value = value.get<uint64_t>() + one[key].get<uint64_t>();
    }
    shards[shard] = std::move(one);
  }
  if (answers.answered.empty()) {
    return kExitFailed;  // no figures rather than zeros
  }
  bool per_shard = absl::GetFlag(FLAGS_per_shard);
  if (absl::GetFlag(FLAGS_json)) {
    nlohmann::json out = total;
    if (per_shard) {
      out["shards"] = shards;
    }
    std::cout << out.dump() << "\n";
    return answers.exit_code();
  }
  for (const auto& [key, value] : total.items()) {
    std::printf("%-10s %s", key.c_str(), value.dump().c_str());
    if (per_shard) {
      for (const auto& [shard, one] : shards.items()) {
        std::printf("   %s %s", Cell(shard).c_str(), one[key].dump().c_str());
      }
    }
    std::printf("\n");
  }
  return answers.exit_code();
}

int Kick(const std::string& account) {
  relay::v1::KickRequest request;
  request.set_account(account);
  relay::v1::KickResponse response;
  if (!CallShard(OwnerOf(account), &relay::v1::RouterAdmin::Stub::Kick, request, &response)) {
    return kExitFailed;
  }
  std::cout << (response.kicked() ? "disconnected the tab of " : "no tab here for ")
            << Cell(account) << "\n";
  return response.kicked() ? kExitOk : kExitFailed;
}

int EndSession(const std::string& session) {
  relay::v1::EndSessionRequest request;
  request.set_session_id(session);
  relay::v1::EndSessionResponse response;
  // The id names its account ("v1.<account, base64url>.<nonce>.<mac>"): its shard is the
  // owner, which tells every gateway. An id that names none is refused by every shard alike.
  std::vector<std::string> parts = absl::StrSplit(session, '.');
  std::string account;
  if (parts.size() != 4 || !absl::WebSafeBase64Unescape(parts[1], &account)) {
    std::cerr << "relayctl end-session: not a session id of this relay\n";
    return 2;
  }
  if (!CallShard(OwnerOf(account), &relay::v1::RouterAdmin::Stub::EndSession, request,
                 &response)) {
    return kExitFailed;
  }
  std::cout << "ended the session\n";
  return kExitOk;
}

int ListTabs() {
  auto answers = AskAll<relay::v1::ListTabsResponse>(&relay::v1::RouterAdmin::Stub::ListTabs,
                                                     relay::v1::ListTabsRequest());
  bool json = absl::GetFlag(FLAGS_json);
  nlohmann::json tabs = nlohmann::json::array();
  if (!json) {
    std::printf("%-24s %-10s %-10s %-20s %-10s %s\n", "ACCOUNT", "GATEWAY", "TAB", "CLIENT",
                "IN FLIGHT", "SHARD");
  }
  for (const auto& [shard, response] : answers.answered) {
    for (const auto& tab : response.tabs()) {
      if (json) {
        tabs.push_back({{"account", tab.account()},
                        {"role", tab.role()},
                        {"gateway", tab.gateway_id()},
                        {"tabId", tab.tab_id()},
                        {"client", tab.client_name()},
                        {"clientVersion", tab.client_version()},
                        {"connectedAtMs", tab.connected_at_unix_ms()},
                        {"callsInFlight", tab.calls_in_flight()},
                        {"shard", shard}});
      } else {
        std::printf("%-24s %-10s %-10llu %-20s %-10llu %s\n", Cell(tab.account()).c_str(),
                    Cell(tab.gateway_id()).c_str(),
                    static_cast<unsigned long long>(tab.tab_id()),
                    Cell(tab.client_name()).c_str(),
                    static_cast<unsigned long long>(tab.calls_in_flight()), Cell(shard).c_str());
      }
    }
  }
  if (json) {
    std::cout << tabs.dump() << "\n";
  }
  return answers.exit_code();
}

// Drops cached verifications at once, e.g. after revoking a token in the host
// API without waiting for --verify_ttl.
// Calls one Auth method on --authsvc with a 5 s deadline; says why it failed.
template <typename Request, typename Response, typename Method>
bool CallAuthsvc(Method method, const Request& request, Response* response) {
  auto stub = relay::v1::Auth::NewStub(ChannelTo(absl::GetFlag(FLAGS_authsvc)));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::Status status = ((*stub).*method)(&context, request, response);
  if (!status.ok()) {
    std::cerr << "relayctl: authsvc " << absl::GetFlag(FLAGS_authsvc)
              << " did not answer: " << status.error_message() << "\n";
  }
  return status.ok();
}

int AuthForget() {
  std::string user = absl::GetFlag(FLAGS_user);
  std::string hash = absl::GetFlag(FLAGS_token_sha256);
  if (user.empty() == hash.empty()) {
    std::cerr << "relayctl auth forget: give exactly one of --user or --token_sha256\n";
    return 2;
  }
  relay::v1::ForgetRequest request;
  if (!user.empty()) {
    request.set_user(user);
  } else {
    // As sha256sum prints it, or in capitals: the same hash.
    request.set_token_sha256(absl::AsciiStrToLower(hash));
  }
  relay::v1::ForgetResponse response;
  if (!CallAuthsvc(&relay::v1::Auth::Stub::Forget, request, &response)) {
    return kExitFailed;
  }
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << nlohmann::json{{"dropped", response.dropped()}}.dump() << "\n";
  } else {
    std::cout << "dropped " << response.dropped() << " cached verification(s)\n";
  }
  return 0;
}

// One shard's events until the process ends: the stream is opened again
// (every 2 s) when it breaks; people read on stderr when it is on and off.
void WatchShard(const std::string& shard, std::mutex& out_mu) {
  bool json = absl::GetFlag(FLAGS_json);
  for (;;) {
    auto stub = relay::v1::RouterAdmin::NewStub(ChannelTo(shard));
    grpc::ClientContext context;
    auto reader = stub->Watch(&context, relay::v1::WatchRequest());
    reader->WaitForInitialMetadata();
    bool on = context.GetServerInitialMetadata().count("relay-watch") > 0;
    if (on) {
      std::lock_guard<std::mutex> lock(out_mu);
      std::cerr << "relayctl: watching router " << shard << "\n" << std::flush;
    }
    relay::v1::WatchEvent event;
    while (reader->Read(&event)) {
      std::string line = json ? WatchJson(shard, event) : WatchLine(shard, event);
      std::lock_guard<std::mutex> lock(out_mu);
      std::cout << line << "\n" << std::flush;
    }
    grpc::Status status = reader->Finish();
    {
      std::lock_guard<std::mutex> lock(out_mu);
      std::cerr << "relayctl: router " << shard << (on ? ": the watch ended: " : " did not answer: ")
                << status.error_message() << "; trying again\n" << std::flush;
    }
    if (status.error_code() == grpc::StatusCode::PERMISSION_DENIED ||
        status.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
      std::exit(kExitFailed);  // another try cannot help: the certificate is wrong
    }
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
}

// Every shard's events, merged as they come, until interrupted.
int Watch() {
  std::mutex out_mu;
  std::vector<std::thread> threads;
  for (const std::string& shard : Shards()) {
    threads.emplace_back([&out_mu, shard] { WatchShard(shard, out_mu); });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  return kExitOk;
}

// The cache's and the host API's figures, from authsvc.
int AuthStats() {
  relay::v1::AuthStats r;
  if (!CallAuthsvc(&relay::v1::Auth::Stub::GetStats, relay::v1::GetAuthStatsRequest(), &r)) {
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
  if (absl::GetFlag(FLAGS_json)) {
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

constexpr char kUsage[] =
    "usage: relayctl [--router A,B,...] [--json] (tabs | sessions [--account A] | stats "
    "[--per_shard])\n"
    "       relayctl [--router A,B,...] [--json] watch\n"
    "       relayctl [--router A,B,...] kick ACCOUNT\n"
    "       relayctl [--router A,B,...] end-session SESSION_ID\n"
    "       relayctl [--authsvc ADDR] auth forget (--user NAME | --token_sha256 HEX)\n"
    "       relayctl [--authsvc ADDR] [--json] auth stats\n"
    "       relayctl reflect ADDRESS      (the services a server lists by gRPC reflection)\n"
    "With mutual TLS: --grpc_tls_ca CA.pem --grpc_tls_cert operator.pem --grpc_tls_key operator.key\n"
    "Every shard is asked (kick and end-session: the one that owns the account); exit code 3\n"
    "when some shard did not answer (the answer is partial), 1 when none did.\n";

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
  if (words == std::vector<std::string>{"watch"}) {
    return Watch();
  }
  if (words.size() == 2 && words[0] == "kick") {
    return Kick(words[1]);
  }
  if (words.size() == 2 && words[0] == "end-session") {
    return EndSession(words[1]);
  }
  if (words == std::vector<std::string>{"auth", "stats"}) {
    return AuthStats();
  }
  if (words == std::vector<std::string>{"auth", "forget"}) {
    return AuthForget();
  }
  if (words.size() == 2 && words[0] == "reflect") {
    return relay::relayctl::Reflect(ChannelTo(words[1]));
  }
  std::cerr << kUsage;
  return 2;
}
