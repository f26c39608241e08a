// relayctl's commands on the router shards: tabs, sessions, stats, kick, end-session.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "relayctl/commands.h"

namespace relay::relayctl {

int ListSessions(const Fleet& fleet, const std::string& account, bool json) {
  v1::ListSessionsRequest request;
  request.set_account(account);
  auto answers = fleet.AskAll<v1::ListSessionsResponse>(
      &v1::RouterAdmin::Stub::ListSessions, request);
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

namespace {

nlohmann::json StatsJson(const v1::GetStatsResponse& r) {
  return {{"links", r.links()},       {"tabs", r.tabs()},         {"sessions", r.sessions()},
          {"forwards", r.forwards()}, {"results", r.results()},   {"errors", r.errors()},
          {"noTab", r.no_tab()},      {"tabGone", r.tab_gone()},  {"displaced", r.displaced()},
          {"cancelled", r.cancelled()}};
}

}  // namespace

int Stats(const Fleet& fleet, bool per_shard, bool json) {
  auto answers =
      fleet.AskAll<v1::GetStatsResponse>(&v1::RouterAdmin::Stub::GetStats,
                                          v1::GetStatsRequest());
  // Summed over the shards; links are per shard (every gateway links to every shard), so
  // the sum counts each gateway once per shard.
  nlohmann::json total = StatsJson(v1::GetStatsResponse());
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
  if (json) {
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

int Kick(const Fleet& fleet, const std::string& account) {
  v1::KickRequest request;
  request.set_account(account);
  v1::KickResponse response;
  if (!fleet.CallShard(fleet.OwnerOf(account), &v1::RouterAdmin::Stub::Kick, request, &response)) {
    return kExitFailed;
  }
  std::cout << (response.kicked() ? "disconnected the tab of " : "no tab here for ")
            << Cell(account) << "\n";
  return response.kicked() ? kExitOk : kExitFailed;
}

int EndSession(const Fleet& fleet, const std::string& session) {
  v1::EndSessionRequest request;
  request.set_session_id(session);
  v1::EndSessionResponse response;
  // The id names its account ("v1.<account, base64url>.<nonce>.<mac>"): its shard is the
  // owner, which tells every gateway. An id that names none is refused by every shard alike.
  std::vector<std::string> parts = absl::StrSplit(session, '.');
  std::string account;
  if (parts.size() != 4 || !absl::WebSafeBase64Unescape(parts[1], &account)) {
    std::cerr << "relayctl end-session: not a session id of this relay\n";
    return kExitUsage;
  }
  if (!fleet.CallShard(fleet.OwnerOf(account), &v1::RouterAdmin::Stub::EndSession, request,
                 &response)) {
    return kExitFailed;
  }
  std::cout << "ended the session\n";
  return kExitOk;
}

int ListTabs(const Fleet& fleet, bool json) {
  auto answers = fleet.AskAll<v1::ListTabsResponse>(&v1::RouterAdmin::Stub::ListTabs,
                                                     v1::ListTabsRequest());
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

}  // namespace relay::relayctl
