// relayctl watch: every shard's events, merged as they come.
#include <cstdio>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "relayctl/commands.h"

namespace relay::relayctl {

namespace {

// A watch event's kind as people and scripts read it: "tab_up", ...
std::string KindName(v1::WatchEvent::Kind kind) {
  return absl::AsciiStrToLower(v1::WatchEvent::Kind_Name(kind));
}

std::string WatchJson(const std::string& shard, const v1::WatchEvent& e) {
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
std::string WatchLine(const std::string& shard, const v1::WatchEvent& e) {
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

// One shard's events until the process ends: the stream is opened again
// (every 2 s) when it breaks; people read on stderr when it is on and off.
void WatchShard(const Fleet& fleet, const std::string& shard, bool json, std::mutex& out_mu) {
  for (;;) {
    auto stub = v1::RouterAdmin::NewStub(fleet.ChannelTo(shard));
    grpc::ClientContext context;
    auto reader = stub->Watch(&context, v1::WatchRequest());
    reader->WaitForInitialMetadata();
    bool on = context.GetServerInitialMetadata().count("relay-watch") > 0;
    if (on) {
      std::lock_guard<std::mutex> lock(out_mu);
      std::cerr << "relayctl: watching router " << shard << "\n" << std::flush;
    }
    v1::WatchEvent event;
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


}  // namespace

// Every shard's events, merged as they come, until interrupted.
int Watch(const Fleet& fleet, bool json) {
  std::mutex out_mu;
  std::vector<std::thread> threads;
  for (const std::string& shard : fleet.shards()) {
    threads.emplace_back([&fleet, &out_mu, shard, json] { WatchShard(fleet, shard, json, out_mu); });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  return kExitOk;
}

}  // namespace relay::relayctl
