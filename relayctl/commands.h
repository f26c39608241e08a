#pragma once

#include <memory>
#include <string>

#include <grpcpp/channel.h>

#include "relayctl/fleet.h"

namespace relay::relayctl {

// The commands, each returning the process's exit code (fleet.h). json: machine-readable.

// On the router shards (every shard is asked; kick and end-session: the account's owner).
int ListTabs(const Fleet& fleet, bool json);
int ListSessions(const Fleet& fleet, const std::string& account, bool json);
int Stats(const Fleet& fleet, bool per_shard, bool json);
int Kick(const Fleet& fleet, const std::string& account);
int EndSession(const Fleet& fleet, const std::string& session);
// Every shard's events, merged as they come, until interrupted.
int Watch(const Fleet& fleet, bool json);

// On authsvc.
struct Authsvc {
  std::string address;
  std::shared_ptr<grpc::Channel> channel;
};
// Exactly one of user and token_sha256 (hex, any case).
int AuthForget(const Authsvc& authsvc, const std::string& user, const std::string& token_sha256,
               bool json);
int AuthStats(const Authsvc& authsvc, bool json);

}  // namespace relay::relayctl
