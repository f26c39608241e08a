// The three services in one process, wired as their main()s wire them, with
// fakes only at the edges: the host API (a HostApi that knows one token and
// one ticket) and the two ends people and agents hold (a tab's WebSocket and
// an agent's HTTP, spoken here with Beast). One tools/call crosses the whole
// relay: agent → gateway → link → router → link → gateway → tab and back.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include <grpcpp/grpcpp.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include "authsvc/auth_service.h"
#include "authsvc/host_api_client.h"
#include "authsvc/verify_cache.h"
#include "common/clock.h"
#include "common/grpc/cq_loop.h"
#include "common/grpc/grpc_server.h"
#include "gateway/gateway.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "router/net/gateway_links.h"
#include "router/rpc/link_server.h"
#include "router/rpc/router_hub.h"

namespace relay {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using asio::ip::tcp;

constexpr char kOrigin[] = "http://editor.test";

// The host API: alice's token and alice's tab ticket are good, nothing else.
class FakeHostApi final : public authsvc::HostApi {
 public:
  void Post(std::string route, std::string json_body, Callback done) override {
    nlohmann::json body = nlohmann::json::parse(json_body, nullptr, false);
    authsvc::HostReply reply{401, R"({"error":"invalid"})", ""};
    if (route == "agent/verify" && body.value("token", "") == "token-of-alice") {
      reply = {200, R"({"user":"alice","role":"editor"})", ""};
    } else if (route == "agent/redeem" && body.value("ticket", "") == "ticket-of-alice") {
      reply = {200, R"({"user":"alice"})", ""};
    }
    done(std::move(reply));
  }
};

// authsvc as its main() builds it, on the fake host API.
struct AuthsvcInProcess {
  AuthsvcInProcess() {
    auto started = common::StartGrpcServer("127.0.0.1:0", {&service}, {.tls = &tls});
    EXPECT_TRUE(started.ok()) << started.status();
    server = std::move(started->server);
    port = started->port;
  }
  ~AuthsvcInProcess() { server->Shutdown(std::chrono::system_clock::now()); }
  FakeHostApi host_api;
  authsvc::VerifyCache cache{authsvc::VerifyCacheOptions{}, [] { return common::MonotonicNow(); }};
  authsvc::AuthService service{host_api, cache};
  common::ServiceTls tls;  // plaintext, as on a developer's loopback
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};

// A router shard as its main() builds it: the hub, the links' port, and
// Router.OpenLink on a CqLoop.
struct RouterInProcess {
  RouterInProcess() {
    auto started_links = router::GatewayLinks::Start("127.0.0.1:0", tls, hub);
    EXPECT_TRUE(started_links.ok()) << started_links.status();
    links = *std::move(started_links);
    link_server = std::make_unique<router::LinkServer>(links->port());
    std::unique_ptr<grpc::ServerCompletionQueue> cq;
    auto started = common::StartGrpcServer("127.0.0.1:0", {link_server->service()},
                                           {.default_health = false, .cq = &cq, .tls = &tls});
    EXPECT_TRUE(started.ok()) << started.status();
    server = std::move(started->server);
    port = started->port;
    loop = std::make_unique<common::CqLoop>(std::move(cq));
    link_server->Serve(*loop);
    loop->Start();
  }
  ~RouterInProcess() {
    links->Stop();
    server->Shutdown(std::chrono::system_clock::now());
    loop->Stop();
  }
  router::RouterHub hub;
  common::ServiceTls tls;
  std::unique_ptr<router::GatewayLinks> links;
  std::unique_ptr<router::LinkServer> link_server;
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<common::CqLoop> loop;
  int port = 0;
};

std::string WriteCatalogue() {
  char path[] = "/tmp/relay-inprocess-XXXXXX";
  int fd = mkstemp(path);
  const std::string tools =
      R"({"tools":[{"name":"get_view","description":"What the person sees.",)"
      R"("inputSchema":{"type":"object","properties":{}}}]})";
  EXPECT_EQ(::write(fd, tools.data(), tools.size()), static_cast<ssize_t>(tools.size()));
  ::close(fd);
  return path;
}

// One HTTP exchange with the gateway's MCP endpoint as an agent.
struct AgentAnswer {
  int status = 0;
  std::string session;
  nlohmann::json body;
};

AgentAnswer Post(int port, const std::string& token, const std::string& session,
                 const std::string& json) {
  asio::io_context io;
  beast::tcp_stream stream(io);
  stream.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
  http::request<http::string_body> request(http::verb::post, "/mcp", 11);
  request.set(http::field::host, "127.0.0.1:" + std::to_string(port));
  request.set(http::field::authorization, "Bearer " + token);
  request.set(http::field::content_type, "application/json");
  request.set(http::field::accept, "application/json, text/event-stream");
  if (!session.empty()) {
    request.set("Mcp-Session-Id", session);
    request.set("MCP-Protocol-Version", "2025-06-18");
  }
  request.body() = json;
  request.prepare_payload();
  http::write(stream, request);
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  http::read(stream, buffer, response);
  AgentAnswer answer;
  answer.status = response.result_int();
  answer.session = std::string(response["Mcp-Session-Id"]);
  std::string text = response.body();
  // An SSE answer carries the JSON on its data line.
  if (response[http::field::content_type].starts_with("text/event-stream")) {
    const size_t data = text.find("data: ") + 6;
    text = text.substr(data, text.find('\n', data) - data);
  }
  answer.body = nlohmann::json::parse(text, nullptr, false);
  return answer;
}

class ThreeServicesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    catalogue_ = WriteCatalogue();
    gateway::GatewayConfig config;
    config.listen = "127.0.0.1:0";
    config.routers = {"127.0.0.1:" + std::to_string(router_.port)};
    config.authsvc = "127.0.0.1:" + std::to_string(authsvc_.port);
    config.session_secret = std::string(32, 's');
    config.catalogue_path = catalogue_;
    config.gate.allowed_origins = {kOrigin};
    auto started = gateway::Gateway::Start(std::move(config));
    ASSERT_TRUE(started.ok()) << started.status();
    gateway_ = *std::move(started);
  }
  void TearDown() override {
    if (gateway_) gateway_->Drain();
    std::remove(catalogue_.c_str());
  }

  AuthsvcInProcess authsvc_;
  RouterInProcess router_;
  std::unique_ptr<gateway::Gateway> gateway_;
  std::string catalogue_;
};

TEST_F(ThreeServicesTest, AToolCallCrossesTheRelayToTheAccountsTabAndBack) {
  // The tab: alice's editor, which says hello with its ticket and answers one call.
  asio::io_context tab_io;
  websocket::stream<tcp::socket> tab(tab_io);
  asio::connect(tab.next_layer(),
                tcp::resolver(tab_io).resolve("127.0.0.1", std::to_string(gateway_->port())));
  tab.set_option(websocket::stream_base::decorator(
      [](websocket::request_type& request) { request.set(http::field::origin, kOrigin); }));
  tab.handshake("127.0.0.1:" + std::to_string(gateway_->port()), "/mcp");
  tab.write(asio::buffer(std::string(
      R"({"jsonrpc":"2.0","id":1,"method":"relay/hello","params":{"ticket":"ticket-of-alice",)"
      R"("client":{"name":"in-process tab","version":"1"}}})")));
  beast::flat_buffer buffer;
  tab.read(buffer);
  nlohmann::json hello = nlohmann::json::parse(beast::buffers_to_string(buffer.data()));
  buffer.consume(buffer.size());
  ASSERT_TRUE(hello.contains("result")) << hello.dump();

  std::string asked;
  std::thread tab_thread([&] {
    for (;;) {
      beast::error_code ec;
      tab.read(buffer, ec);
      if (ec) return;
      nlohmann::json message = nlohmann::json::parse(beast::buffers_to_string(buffer.data()), nullptr, false);
      buffer.consume(buffer.size());
      if (message.value("method", "") == "tools/call") {
        asked = message["params"].dump();
        nlohmann::json reply = {{"jsonrpc", "2.0"}, {"id", message["id"]},
                                {"result", {{"content", {{{"type", "text"}, {"text", "a page titled Q3"}}}}}}};
        tab.write(asio::buffer(reply.dump()));
        return;
      }
    }
  });

  AgentAnswer init = Post(gateway_->port(), "token-of-alice", "",
                          R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{)"
                          R"("protocolVersion":"2025-06-18","capabilities":{},)"
                          R"("clientInfo":{"name":"in-process agent","version":"1"}}})");
  ASSERT_EQ(init.status, 200) << init.body.dump();
  ASSERT_FALSE(init.session.empty());

  // A token of nobody is refused before anything is forwarded.
  EXPECT_EQ(Post(gateway_->port(), "token-of-nobody", init.session,
                 R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_view"}})")
                .status,
            401);

  AgentAnswer call = Post(gateway_->port(), "token-of-alice", init.session,
                          R"({"jsonrpc":"2.0","id":3,"method":"tools/call",)"
                          R"("params":{"name":"get_view","arguments":{}}})");
  tab_thread.join();
  ASSERT_EQ(call.status, 200) << call.body.dump();
  EXPECT_EQ(call.body["id"], 3);  // the agent's own id, not the tab's
  EXPECT_EQ(call.body["result"]["content"][0]["text"], "a page titled Q3") << call.body.dump();
  EXPECT_NE(asked.find("get_view"), std::string::npos) << asked;

  beast::error_code ignored;
  tab.close(websocket::close_code::normal, ignored);
}

}  // namespace
}  // namespace relay
