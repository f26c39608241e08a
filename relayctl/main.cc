// relayctl: the operators' command line for the router shards and authsvc. Only wires: the
// commands are in router_commands.cc, watch.cc and auth_commands.cc.
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "common/flags.h"
#include "common/grpc/grpc_tls.h"
#include "relayctl/commands.h"
#include "relayctl/reflect.h"

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

// The router shards, in the order the gateways list them: --router, else RELAY_ROUTER_ADDRS
// (what the gateways are given), else the default router.
std::vector<std::string> Shards() {
  std::string list = absl::GetFlag(FLAGS_router);
  if (list.empty()) {
    const char* env = std::getenv("RELAY_ROUTER_ADDRS");
    list = env != nullptr && *env != '\0' ? env : "127.0.0.1:7001";
  }
  std::vector<std::string> shards = relay::common::SplitList(list);
  if (shards.empty()) {
    std::cerr << "relayctl: no router address; give --router A,B,... or RELAY_ROUTER_ADDRS\n";
    std::exit(relay::relayctl::kExitUsage);
  }
  return shards;
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
  using namespace relay::relayctl;
  absl::SetProgramUsageMessage(kUsage);
  auto args = relay::common::ParseFlagsWithEnv(argc, argv);
  std::vector<std::string> words(args.begin() + 1, args.end());
  auto tls = relay::common::ServiceTlsFromFlags();
  if (!tls.ok()) {
    std::cerr << "relayctl: " << tls.status().message() << "\n";
    return kExitUsage;
  }
  const bool json = absl::GetFlag(FLAGS_json);
  auto fleet = [&tls] { return Fleet(Shards(), *tls); };
  auto authsvc = [&tls] {
    std::string address = absl::GetFlag(FLAGS_authsvc);
    return Authsvc{address, Fleet({}, *tls).ChannelTo(address)};
  };
  using Words = std::vector<std::string>;
  if (words == Words{"tabs"}) {
    return ListTabs(fleet(), json);
  }
  if (words == Words{"sessions"}) {
    return ListSessions(fleet(), absl::GetFlag(FLAGS_account), json);
  }
  if (words == Words{"stats"}) {
    return Stats(fleet(), absl::GetFlag(FLAGS_per_shard), json);
  }
  if (words == Words{"watch"}) {
    return Watch(fleet(), json);
  }
  if (words.size() == 2 && words[0] == "kick") {
    return Kick(fleet(), words[1]);
  }
  if (words.size() == 2 && words[0] == "end-session") {
    return EndSession(fleet(), words[1]);
  }
  if (words == Words{"auth", "stats"}) {
    return AuthStats(authsvc(), json);
  }
  if (words == Words{"auth", "forget"}) {
    return AuthForget(authsvc(), absl::GetFlag(FLAGS_user), absl::GetFlag(FLAGS_token_sha256),
                      json);
  }
  if (words.size() == 2 && words[0] == "reflect") {
    return Reflect(Fleet({}, *tls).ChannelTo(words[1]));
  }
  std::cerr << kUsage;
  return kExitUsage;
}
