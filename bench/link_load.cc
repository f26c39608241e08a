// relay-linkload: speaks the link to one router shard as a gateway would, so that a shard can be
// rebuilt from more tabs than this machine's descriptor limit lets real tab sockets hold
// (bench.mjs --rebuild). It announces --tabs tabs, each of its own account (PREFIX-0 …), in
// batches as a gateway's link does, and announces them again each time the link comes back (the
// shard restarted; tried again every 100 ms, as a gateway's RouterShard does after a link that
// held). Each time the router has accepted every tab it prints one JSON line:
//   {"accepted":N,"ms_since_linked":…,"link":K}
// The link is the project's own (common/link/LinkEndpoint), the one the gateways use.
//   relay-linkload --link 127.0.0.1:PORT --tabs 25000 --prefix g1 [--grpc_tls_* as a gateway]
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/flags.h"
#include "common/link/link_channel.h"
#include "common/link/link_endpoint.h"
#include "common/log.h"
#include "common/service_tls.h"
#include "relay/v1/router.pb.h"

ABSL_FLAG(std::string, link, "", "the router shard's link address, host:port");
ABSL_FLAG(int64_t, tabs, 1000, "tabs to announce, each of its own account");
ABSL_FLAG(std::string, prefix, "load", "the accounts are PREFIX-0, PREFIX-1, …");
ABSL_FLAG(std::string, gateway_id, "linkload", "the gateway id said in the hello");

namespace {

using relay::v1::GatewayBatch;
using relay::v1::GatewayEvent;
using relay::v1::RouterBatch;
using Endpoint = relay::common::LinkEndpoint<RouterBatch, GatewayEvent>;

// One link's life: the hello and every tab queued before it connects (as a gateway's shard
// queues its hello), the router's acceptances counted.
class LoadLink final : public Endpoint {
 public:
  LoadLink(boost::asio::io_context& io, std::shared_ptr<relay::common::LinkTls> tls, int64_t tabs,
           int link_number)
      : Endpoint(io, std::move(tls), {.peer_role = "router", .server = false}),
        tabs_(tabs), link_number_(link_number) {}

  void Announce(const std::string& gateway_id, const std::string& prefix) {
    GatewayEvent hello;
    hello.mutable_hello()->set_gateway_id(gateway_id);
    Enqueue(hello, Admit::kAlways);
    for (int64_t i = 0; i < tabs_; ++i) {
      GatewayEvent event;
      auto* up = event.mutable_tab_up();
      up->set_tab_id(static_cast<uint64_t>(i + 1));
      up->set_account(absl::StrCat(prefix, "-", i));
      up->set_role("editor");
      up->set_client_name("relay-linkload");
      up->set_client_version("1");
      Enqueue(event, Admit::kAlways);
    }
  }
  absl::Notification& ended() { return ended_; }

 private:
  absl::Status OnAdmitted() override {
    linked_at_ = std::chrono::steady_clock::now();
    return absl::OkStatus();
  }
  void OnBatch(RouterBatch& batch) override {
    for (const relay::v1::RouterCommand& command : batch.commands()) {
      if (command.has_tab_accepted() && ++accepted_ == tabs_) {
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now() - linked_at_)
                            .count();
        std::printf("{\"accepted\":%lld,\"ms_since_linked\":%lld,\"link\":%d}\n",
                    static_cast<long long>(accepted_), static_cast<long long>(ms), link_number_);
        std::fflush(stdout);
      }
    }
  }
  void OnEnded(const absl::Status& status) override {
    relay::common::LogInfo("link ended", {{"why", status.message()}});
    ended_.Notify();
  }
  bool EndsOnWriteStall() const override { return false; }

  const int64_t tabs_;
  const int link_number_;
  int64_t accepted_ = 0;  // the link's thread's alone
  std::chrono::steady_clock::time_point linked_at_;
  absl::Notification ended_;
};

}  // namespace

int main(int argc, char** argv) {
  using namespace relay;
  common::SetLogService("linkload");
  common::ParseFlagsWithEnv(argc, argv);
  auto address = common::SplitHostPort(absl::GetFlag(FLAGS_link));
  if (!address.ok()) {
    common::Fatal(absl::StrCat("--link: ", address.status().message()));
  }
  auto tls = common::ServiceTlsFromFlags();
  if (!tls.ok()) {
    common::Fatal(tls.status().message());
  }
  auto link_tls = common::LinkTls::Make(*tls, common::LinkTls::Side::kClient);
  if (!link_tls.ok()) {
    common::Fatal(link_tls.status().message());
  }
  boost::asio::io_context io(1);
  auto work = boost::asio::make_work_guard(io);
  std::thread thread([&io] { io.run(); });
  // Until killed: the bench ends it by its pid.
  for (int number = 1;; ++number) {
    auto link = std::make_shared<LoadLink>(io, *link_tls, absl::GetFlag(FLAGS_tabs), number);
    link->Announce(absl::GetFlag(FLAGS_gateway_id), absl::GetFlag(FLAGS_prefix));
    link->Connect(address->first, address->second);
    link->ended().WaitForNotification();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // a gateway's relink pace
  }
}
