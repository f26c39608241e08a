#pragma once

#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/string_view.h"
#include "common/grpc/grpc_tls.h"
#include "relay/v1/router.grpc.pb.h"

namespace relay::relayctl {

// Exit codes: every shard answered; some did not (the answer is partial);
// none did, or the request failed; the command line was wrong.
constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
constexpr int kExitPartial = 3;

// Every text cell of a table came from outside (accounts from the host API, client names
// from tabs): escaped, so that it cannot drive the terminal.
std::string Cell(const std::string& text);

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

// The router shards, in the order the gateways list them (rendezvous hashing over these exact
// strings decides which shard owns an account), reached with the operator's certificate.
class Fleet {
 public:
  Fleet(std::vector<std::string> shards, common::ServiceTls tls)
      : shards_(std::move(shards)), tls_(std::move(tls)) {}

  const std::vector<std::string>& shards() const { return shards_; }
  std::shared_ptr<grpc::Channel> ChannelTo(const std::string& address) const;
  // The shard that owns the account, as the gateways pick it.
  std::string OwnerOf(absl::string_view account) const;

  // Calls one RouterAdmin method on one shard with a 5 s deadline; says why it failed.
  template <typename Request, typename Response, typename Method>
  bool CallShard(const std::string& shard, Method method, const Request& request,
                 Response* response) const {
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
  Answers<Response> AskAll(Method method, const Request& request) const {
    Answers<Response> answers;
    for (const std::string& shard : shards_) {
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

 private:
  std::vector<std::string> shards_;
  common::ServiceTls tls_;
};

}  // namespace relay::relayctl
