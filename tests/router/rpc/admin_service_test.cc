// RouterAdmin over real gRPC under mutual TLS (certificates from an in-memory
// CA): what an operator sees and may do, and that the role check
// (common/grpc/grpc_tls.h, CallerIs) turns away every other certificate.
#include "router/rpc/admin_service.h"

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "common/grpc/cq_loop.h"
#include "common/grpc/grpc_server.h"
#include "common/grpc/grpc_tls.h"
#include "gtest/gtest.h"
#include "testing/test_ca.h"

namespace relay::router {
namespace {

using testing::TestCa;

class NullWriter final : public LinkWriter {
 public:
  void Push(const relay::v1::RouterCommand&) override {}
  void Flush() override {}
};

class AdminServiceTest : public ::testing::Test {
 protected:
  AdminServiceTest() {
    server_tls_ = ca_.Issue("router", TestCa::Use::kServer);
    std::unique_ptr<grpc::ServerCompletionQueue> cq;
    auto started = common::StartGrpcServer("127.0.0.1:0", {admin_.service()},
                                           {.default_health = false, .cq = &cq, .tls = &server_tls_});
    EXPECT_TRUE(started.ok()) << started.status();
    server_ = std::move(started->server);
    port_ = started->port;
    loop_ = std::make_unique<common::CqLoop>(std::move(cq));
    admin_.Serve(*loop_);
    loop_->Start();
    // A tab of alice's on a gateway's link.
    link_ = hub_.AddLink(std::make_shared<NullWriter>());
    relay::v1::GatewayBatch batch;
    auto* up = batch.add_events()->mutable_tab_up();
    up->set_tab_id(7);
    up->set_account("alice");
    up->set_client_name("editor");
    hub_.Handle(link_, batch);
  }
  ~AdminServiceTest() override {
    server_->Shutdown(std::chrono::system_clock::now());
    loop_->Stop();
  }

  std::unique_ptr<relay::v1::RouterAdmin::Stub> Stub(const common::ServiceTls& tls) {
    grpc::ChannelArguments args;
    return relay::v1::RouterAdmin::NewStub(grpc::CreateCustomChannel(
        "127.0.0.1:" + std::to_string(port_), common::ChannelCredentials(tls), args));
  }
  static std::unique_ptr<grpc::ClientContext> Context() {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return context;
  }

  TestCa ca_;
  common::ServiceTls server_tls_;
  RouterHub hub_;
  RouterAdminService admin_{hub_};
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<common::CqLoop> loop_;
  int port_ = 0;
  uint64_t link_ = 0;
};

TEST_F(AdminServiceTest, AnOperatorSeesTheTabsAndMayKickOne) {
  auto stub = Stub(ca_.Issue("operator", TestCa::Use::kClient));
  relay::v1::ListTabsResponse tabs;
  grpc::Status listed = stub->ListTabs(Context().get(), relay::v1::ListTabsRequest(), &tabs);
  ASSERT_TRUE(listed.ok()) << listed.error_message();
  ASSERT_EQ(tabs.tabs_size(), 1);
  EXPECT_EQ(tabs.tabs(0).account(), "alice");
  EXPECT_EQ(tabs.tabs(0).client_name(), "editor");

  relay::v1::KickRequest kick;
  kick.set_account("alice");
  relay::v1::KickResponse kicked;
  ASSERT_TRUE(stub->Kick(Context().get(), kick, &kicked).ok());
  EXPECT_TRUE(kicked.kicked());
  ASSERT_TRUE(stub->Kick(Context().get(), kick, &kicked).ok());
  EXPECT_FALSE(kicked.kicked());  // gone: nothing left to kick
}

TEST_F(AdminServiceTest, AGatewaysCertificateIsTurnedAwayAndChangesNothing) {
  auto stub = Stub(ca_.Issue("gateway", TestCa::Use::kClient));
  relay::v1::ListTabsResponse tabs;
  grpc::Status listed = stub->ListTabs(Context().get(), relay::v1::ListTabsRequest(), &tabs);
  EXPECT_EQ(listed.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(listed.error_message().find("operator"), std::string::npos) << listed.error_message();
  relay::v1::KickRequest kick;
  kick.set_account("alice");
  relay::v1::KickResponse kicked;
  EXPECT_EQ(stub->Kick(Context().get(), kick, &kicked).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(hub_.Read([](const RouterCore& core) { return core.tabs().Find("alice").has_value(); }));
}

TEST_F(AdminServiceTest, ACertificateOfAnotherCaCannotConnect) {
  TestCa other("another CA");
  common::ServiceTls stranger = other.Issue("operator", TestCa::Use::kClient);
  stranger.ca_pem = ca_.ca_pem();  // it trusts the router; the router does not trust it
  relay::v1::GetStatsResponse stats;
  grpc::Status status = Stub(stranger)->GetStats(Context().get(), relay::v1::GetStatsRequest(), &stats);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
}

}  // namespace
}  // namespace relay::router
