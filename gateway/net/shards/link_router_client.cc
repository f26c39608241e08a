// The gateway's router client: one RouterShard per shard address, each account
// on the shard that rendezvous hashing picks (ShardPicker, the same choice on
// every gateway).
#include "gateway/net/shards/link_router_client.h"

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/link/link_channel.h"
#include "gateway/core/shard_picker.h"
#include "gateway/net/shards/router_shard.h"

namespace relay::gateway {
namespace {

using relay::v1::GatewayEvent;

class LinkRouterClient final : public RouterClient {
 public:
  LinkRouterClient(const std::vector<std::string>& addresses, const common::ServiceTls& tls,
                   std::shared_ptr<common::LinkTls> link_tls, std::string gateway_id,
                   RouterCommandSink& sink, common::CqLoop& loop, boost::asio::io_context& io)
      : picker_(addresses) {
    for (size_t i = 0; i < addresses.size(); ++i) {
      shards_.push_back(std::make_unique<RouterShard>(i, addresses[i], tls, link_tls, gateway_id,
                                                      sink, next_ref_, loop, io));
    }
    for (auto& shard : shards_) {
      shard->Start();
    }
  }

  ~LinkRouterClient() override {
    for (auto& shard : shards_) {
      shard->Stop();
    }
  }

  void Send(const std::string& account, const GatewayEvent& event) override {
    shards_[picker_.Pick(account)]->Send(event);
  }

  uint64_t Forward(ForwardRequest request, std::shared_ptr<CallWaiter> waiter) override {
    RouterShard& shard = *shards_[picker_.Pick(request.account)];
    return shard.Forward(std::move(request), std::move(waiter));
  }

  bool Park(const std::string& account, uint64_t call_ref, uint32_t round,
            absl::Duration ttl) override {
    return shards_[picker_.Pick(account)]->Park(call_ref, round, ttl);
  }
  bool Cancel(const std::string& account, uint64_t call_ref, CancelReason reason) override {
    return shards_[picker_.Pick(account)]->Cancel(call_ref, reason);
  }

  size_t CallsInFlight() const override {
    size_t calls = 0;
    for (const auto& shard : shards_) {
      calls += shard->CallsInFlight();
    }
    return calls;
  }

  void CancelAll(CancelReason reason) override {
    for (auto& shard : shards_) {
      shard->CancelAll(reason);
    }
  }

  size_t ShardOf(const std::string& account) const override { return picker_.Pick(account); }

  bool Flushed() const override {
    for (const auto& shard : shards_) {
      if (!shard->Flushed()) {
        return false;
      }
    }
    return true;
  }

  size_t ShardsUp() const override {
    size_t up = 0;
    for (const auto& shard : shards_) {
      up += shard->up() ? 1 : 0;
    }
    return up;
  }

 private:
  ShardPicker picker_;
  std::atomic<uint64_t> next_ref_{1};
  std::vector<std::unique_ptr<RouterShard>> shards_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<RouterClient>> NewLinkRouterClient(
    const std::vector<std::string>& shards, const common::ServiceTls& tls, std::string gateway_id,
    RouterCommandSink& sink, common::CqLoop& loop, boost::asio::io_context& io) {
  for (const std::string& shard : shards) {
    // The link dials the same host: a plain host:port, not a gRPC target URI.
    auto parts = common::SplitHostPort(shard);
    if (!parts.ok() || parts->first.empty() || absl::StrContains(shard, '/')) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--router_addrs: \"", shard, "\" is not host:port (e.g. router-0.router:7001)"));
    }
  }
  auto link_tls = common::LinkTls::Make(tls, common::LinkTls::Side::kClient);
  if (!link_tls.ok()) {
    return link_tls.status();
  }
  return std::make_unique<LinkRouterClient>(shards, tls, *std::move(link_tls), std::move(gateway_id),
                                            sink, loop, io);
}

}  // namespace relay::gateway
