// The link's transport over loopback, both ends as the services use them
// (common/link/link_endpoint.h on a LinkListener and a dialled LinkChannel),
// and raw peers that misbehave: a frame past the bound, a close mid-frame, a
// frame that is not a batch, a peer that stops reading, a silent one, the
// wrong role.

#include "common/link/link_endpoint.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <csignal>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/link/link_frame.h"
#include "common/link/link_listener.h"
#include "gtest/gtest.h"
#include "relay/v1/router.pb.h"
#include "testing/test_ca.h"

namespace relay::common {
namespace {

using relay::v1::GatewayBatch;
using relay::v1::GatewayEvent;
using relay::v1::RouterBatch;
using relay::v1::RouterCommand;
using testing::TestCa;

constexpr absl::Duration kWait = absl::Seconds(10);

using GatewaySide = LinkEndpoint<RouterBatch, GatewayEvent>;
using RouterSide = LinkEndpoint<GatewayBatch, RouterCommand>;

class TestRouterEnd;

// What one end heard, for the test thread to wait on.
struct Heard {
  absl::Mutex mu;
  bool admitted ABSL_GUARDED_BY(mu) = false;
  TestRouterEnd* router_end ABSL_GUARDED_BY(mu) = nullptr;  // the router's end, once admitted
  int items ABSL_GUARDED_BY(mu) = 0;
  int want ABSL_GUARDED_BY(mu) = 0;
  std::vector<std::string> ids ABSL_GUARDED_BY(mu);
  std::vector<int> batch_sizes ABSL_GUARDED_BY(mu);  // the router's end: items per batch heard
  std::vector<bool> behind ABSL_GUARDED_BY(mu);
  bool ended ABSL_GUARDED_BY(mu) = false;
  absl::Status status ABSL_GUARDED_BY(mu);

  bool AwaitEnded() {
    absl::MutexLock lock(&mu);
    return mu.AwaitWithTimeout(absl::Condition(&ended), kWait);
  }
  bool AwaitItems(int n) {
    absl::MutexLock lock(&mu);
    want = n;
    return mu.AwaitWithTimeout(
        absl::Condition(
            +[](Heard* h) ABSL_NO_THREAD_SAFETY_ANALYSIS { return h->items >= h->want; }, this),
        kWait);
  }
  bool AwaitAdmitted() {
    absl::MutexLock lock(&mu);
    return mu.AwaitWithTimeout(absl::Condition(&admitted), kWait);
  }
  absl::Status ended_status() {
    absl::MutexLock lock(&mu);
    return status;
  }
};

// The gateway's end: dials, waits to be admitted.
class TestGatewayEnd final : public GatewaySide {
 public:
  TestGatewayEnd(boost::asio::io_context& io, std::shared_ptr<LinkTls> tls, Heard& heard)
      : GatewaySide(io, std::move(tls), {.peer_role = "router", .server = false}), heard_(heard) {}

 private:
  absl::Status OnAdmitted() override {
    absl::MutexLock lock(&heard_.mu);
    heard_.admitted = true;
    return absl::OkStatus();
  }
  void OnBatch(RouterBatch& batch) override {
    absl::MutexLock lock(&heard_.mu);
    heard_.items += batch.commands_size();
  }
  void OnEnded(const absl::Status& status) override {
    absl::MutexLock lock(&heard_.mu);
    heard_.ended = true;
    heard_.status = status;
  }
  bool EndsOnWriteStall() const override { return false; }
  Heard& heard_;
};

// The router's end: accepted by the listener, admits.
class TestRouterEnd final : public RouterSide {
 public:
  TestRouterEnd(boost::asio::io_context& io, std::shared_ptr<LinkTls> tls, Heard& heard)
      : RouterSide(io, std::move(tls), {.peer_role = "gateway", .server = true}), heard_(heard) {}

 private:
  absl::Status OnAdmitted() override {
    absl::MutexLock lock(&heard_.mu);
    heard_.admitted = true;
    heard_.router_end = this;
    return absl::OkStatus();
  }
  void OnBatch(GatewayBatch& batch) override {
    absl::MutexLock lock(&heard_.mu);
    heard_.batch_sizes.push_back(batch.events_size());
    for (const GatewayEvent& event : batch.events()) {
      ++heard_.items;
      heard_.ids.push_back(event.hello().gateway_id());
    }
  }
  void OnBehind(bool behind) override ABSL_NO_THREAD_SAFETY_ANALYSIS {
    absl::MutexLock lock(&heard_.mu);
    heard_.behind.push_back(behind);
  }
  void OnEnded(const absl::Status& status) override {
    absl::MutexLock lock(&heard_.mu);
    heard_.ended = true;
    heard_.status = status;
  }
  Heard& heard_;
};

GatewayEvent Hello(const std::string& id) {
  GatewayEvent event;
  event.mutable_hello()->set_gateway_id(id);
  return event;
}

std::string Frame(const google::protobuf::MessageLite& message) {
  std::string out;
  AppendLinkFrameHeader(message.ByteSizeLong(), out);
  out += message.SerializeAsString();
  return out;
}

class LinkEndpointTest : public ::testing::Test {
 protected:
  // As in the services (common/signals.cc): OpenSSL writes to the descriptor
  // without MSG_NOSIGNAL, so a peer gone is EPIPE, not a signal.
  LinkEndpointTest() { std::signal(SIGPIPE, SIG_IGN); }
  ~LinkEndpointTest() override {
    if (listener_) listener_->Stop();
    if (client_thread_.joinable()) {
      client_io_.stop();
      client_thread_.join();
    }
  }

  // The router's side listening; every accepted link's end kept in routers_.
  void Listen(std::shared_ptr<LinkTls> tls) {
    auto listener = LinkListener::Start("127.0.0.1:0", [this, tls](boost::asio::io_context& io) {
      return std::make_shared<TestRouterEnd>(io, tls, router_heard_);
    });
    ASSERT_TRUE(listener.ok()) << listener.status();
    listener_ = *std::move(listener);
  }

  std::shared_ptr<TestGatewayEnd> Dial(std::shared_ptr<LinkTls> tls, const std::string& host = "127.0.0.1") {
    if (!client_thread_.joinable()) {
      client_thread_ = std::thread([this] {
        auto guard = boost::asio::make_work_guard(client_io_);
        client_io_.run();
      });
    }
    auto end = std::make_shared<TestGatewayEnd>(client_io_, std::move(tls), gateway_heard_);
    end->Connect(host, std::to_string(listener_->port()));
    return end;
  }

  // A raw, blocking TCP connection to the listener.
  int RawConnect() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(listener_->port()));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    return fd;
  }

  static void SendAll(int fd, const std::string& bytes) {
    ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  }

  std::shared_ptr<LinkTls> Tls(const ServiceTls& tls, LinkTls::Side side) {
    auto made = LinkTls::Make(tls, side);
    EXPECT_TRUE(made.ok()) << made.status();
    return made.ok() ? *made : nullptr;
  }

  // The router's end of the link (alive while the link is open).
  TestRouterEnd* RouterEnd() {
    absl::MutexLock lock(&router_heard_.mu);
    return router_heard_.router_end;
  }

  TestCa ca_;
  Heard router_heard_;
  Heard gateway_heard_;
  std::unique_ptr<LinkListener> listener_;
  boost::asio::io_context client_io_{1};
  std::thread client_thread_;
};

TEST_F(LinkEndpointTest, AdmitsTheLinkAndCarriesBatchesBothWaysUnderTls) {
  Listen(Tls(ca_.Issue("router", TestCa::Use::kServer), LinkTls::Side::kServer));
  auto gateway = Dial(Tls(ca_.Issue("gateway", TestCa::Use::kClient), LinkTls::Side::kClient));
  ASSERT_TRUE(gateway_heard_.AwaitAdmitted());
  ASSERT_TRUE(router_heard_.AwaitAdmitted());

  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(gateway->Enqueue(Hello("g" + std::to_string(i)),
                                 GatewaySide::Admit::kUnlessBehind));
    gateway->Wake();
  }
  ASSERT_TRUE(router_heard_.AwaitItems(1000));
  {
    absl::MutexLock lock(&router_heard_.mu);
    EXPECT_EQ(router_heard_.ids.front(), "g0");
    EXPECT_EQ(router_heard_.ids.back(), "g999");  // in order
  }
  RouterCommand command;
  command.mutable_call_event()->set_message(std::string(3 << 20, 'x'));  // past one batch
  ASSERT_TRUE(RouterEnd()->Enqueue(command, RouterSide::Admit::kAlways));
  ASSERT_TRUE(RouterEnd()->Enqueue(command, RouterSide::Admit::kAlways));
  RouterEnd()->Wake();
  ASSERT_TRUE(gateway_heard_.AwaitItems(2));

  gateway->Close(absl::CancelledError("the test is done"));
  ASSERT_TRUE(router_heard_.AwaitEnded());
  EXPECT_EQ(router_heard_.ended_status().message(), "the peer closed the link");
  ASSERT_TRUE(gateway_heard_.AwaitEnded());
  EXPECT_FALSE(gateway->Enqueue(Hello("late"), GatewaySide::Admit::kAlways));
  EXPECT_TRUE(gateway->Flushed());  // closed: nothing more to wait for
}

// What one turn of the channel's thread wakes goes out in one write (one
// batch), as a router's read turn routing many calls needs; a wake alone is
// written too, without waiting for company.
TEST_F(LinkEndpointTest, WakesOfOneTurnShareAWriteAndALoneWakeIsWritten) {
  Listen(nullptr);
  auto gateway = Dial(nullptr);
  ASSERT_TRUE(gateway_heard_.AwaitAdmitted());
  ASSERT_TRUE(router_heard_.AwaitAdmitted());

  boost::asio::post(client_io_, [gateway] {
    for (int i = 0; i < 5; ++i) {
      gateway->Enqueue(Hello("turn" + std::to_string(i)), GatewaySide::Admit::kAlways);
      gateway->Wake();
    }
  });
  ASSERT_TRUE(router_heard_.AwaitItems(5));
  {
    absl::MutexLock lock(&router_heard_.mu);
    ASSERT_FALSE(router_heard_.batch_sizes.empty());
    EXPECT_EQ(router_heard_.batch_sizes.back(), 5);
  }

  ASSERT_TRUE(gateway->Enqueue(Hello("alone"), GatewaySide::Admit::kAlways));
  gateway->Wake();
  ASSERT_TRUE(router_heard_.AwaitItems(6));
  absl::MutexLock lock(&router_heard_.mu);
  EXPECT_EQ(router_heard_.batch_sizes.back(), 1);
  EXPECT_EQ(router_heard_.ids.back(), "alone");
}

TEST_F(LinkEndpointTest, RefusesAPeerOfTheWrongRole) {
  // An authsvc certificate (a server's, of the same CA) where a router was dialled.
  Listen(Tls(ca_.Issue("authsvc", TestCa::Use::kServer), LinkTls::Side::kServer));
  Dial(Tls(ca_.Issue("gateway", TestCa::Use::kClient), LinkTls::Side::kClient));
  ASSERT_TRUE(gateway_heard_.AwaitEnded());
  absl::Status status = gateway_heard_.ended_status();
  EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(status.message().find("not a router"), absl::string_view::npos) << status;
  absl::MutexLock lock(&gateway_heard_.mu);
  EXPECT_FALSE(gateway_heard_.admitted);
}

TEST_F(LinkEndpointTest, RefusesAServerThatDoesNotNameTheHostDialled) {
  // A router's certificate for another host: a stolen one, say.
  Listen(Tls(ca_.Issue("router", TestCa::Use::kServer, "DNS:router-2.example"),
             LinkTls::Side::kServer));
  Dial(Tls(ca_.Issue("gateway", TestCa::Use::kClient), LinkTls::Side::kClient));
  ASSERT_TRUE(gateway_heard_.AwaitEnded());
  absl::Status status = gateway_heard_.ended_status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(status.message().find("certificate"), absl::string_view::npos) << status;
}

TEST_F(LinkEndpointTest, EndsALinkWhoseFrameAnnouncesMoreThanTheBound) {
  Listen(nullptr);
  int fd = RawConnect();
  std::string header;
  AppendLinkFrameHeader(kMaxLinkFrameBytes + 1, header);
  SendAll(fd, header);
  ASSERT_TRUE(router_heard_.AwaitEnded());
  EXPECT_NE(router_heard_.ended_status().message().find("beyond the limit"), absl::string_view::npos)
      << router_heard_.ended_status();
  ::close(fd);
}

TEST_F(LinkEndpointTest, DeliversNothingOfAFrameCutByTheClose) {
  Listen(nullptr);
  int fd = RawConnect();
  GatewayBatch batch;
  *batch.add_events() = Hello("whole");
  std::string first = Frame(batch);
  *batch.mutable_events(0) = Hello("cut in two");
  std::string second = Frame(batch);
  SendAll(fd, first + second.substr(0, second.size() / 2));
  ASSERT_TRUE(router_heard_.AwaitItems(1));
  ::close(fd);
  ASSERT_TRUE(router_heard_.AwaitEnded());
  EXPECT_EQ(router_heard_.ended_status().message(), "the peer closed the link");
  absl::MutexLock lock(&router_heard_.mu);
  EXPECT_EQ(router_heard_.ids, std::vector<std::string>{"whole"});
}

TEST_F(LinkEndpointTest, EndsALinkWhoseFrameIsNotABatch) {
  Listen(nullptr);
  int fd = RawConnect();
  std::string frame;
  AppendLinkFrameHeader(8, frame);
  frame += std::string(8, '\xff');
  SendAll(fd, frame);
  ASSERT_TRUE(router_heard_.AwaitEnded());
  absl::Status status = router_heard_.ended_status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("not a relay.v1.GatewayBatch"), absl::string_view::npos) << status;
  ::close(fd);
}

TEST_F(LinkEndpointTest, EndsALinkWhosePeerStopsReadingAndSaysItWasBehind) {
  Listen(nullptr);
  int fd = RawConnect();
  int small = 64 << 10;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  GatewayBatch batch;
  *batch.add_events() = Hello("then reads nothing");
  SendAll(fd, Frame(batch));
  ASSERT_TRUE(router_heard_.AwaitItems(1));
  // It keeps pinging (it is alive) but reads nothing of the 80 MiB for it.
  std::atomic<bool> done{false};
  std::thread pinger([&] {
    std::string ping;
    AppendLinkControl(LinkControl::kPing, ping);
    while (!done.load()) {
      ::send(fd, ping.data(), ping.size(), MSG_NOSIGNAL);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // a peer's pace, not a wait
    }
  });
  for (int i = 0; i < 80; ++i) {
    RouterCommand command;
    command.mutable_call_event()->set_message(std::string(1 << 20, 'y'));
    ASSERT_TRUE(RouterEnd()->Enqueue(command, RouterSide::Admit::kAlways));
  }
  RouterEnd()->Wake();
  ASSERT_TRUE(router_heard_.AwaitEnded());
  done.store(true);
  pinger.join();
  EXPECT_NE(router_heard_.ended_status().message().find("took none of the link's bytes"),
            absl::string_view::npos)
      << router_heard_.ended_status();
  absl::MutexLock lock(&router_heard_.mu);
  // Behind past the high watermark, then not (the link's end lets it go).
  EXPECT_EQ(router_heard_.behind, (std::vector<bool>{true, false}));
  ::close(fd);
}

TEST_F(LinkEndpointTest, EndsALinkWhosePeerFallsSilent) {
  Listen(nullptr);
  int fd = RawConnect();
  GatewayBatch batch;
  *batch.add_events() = Hello("then silent");
  SendAll(fd, Frame(batch));
  ASSERT_TRUE(router_heard_.AwaitEnded());  // within 3 s and a beat
  EXPECT_EQ(router_heard_.ended_status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(router_heard_.ended_status().message().find("sent nothing for 3 s"),
            absl::string_view::npos);
  ::close(fd);
}

}  // namespace
}  // namespace relay::common
