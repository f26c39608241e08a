#pragma once

#include "absl/strings/string_view.h"
#include <memory>
#include <optional>
#include <string>

#include <boost/beast/core.hpp>
#include "absl/strings/string_view.h"
#include <boost/beast/http.hpp>

#include "gateway/auth_client.h"
#include "gateway/gateway_state.h"
#include "gateway/mcp_dispatcher.h"
#include "gateway/router_client.h"

namespace relay::gateway {

// One agent's HTTP/1.1 connection (keep-alive, one request at a time), or the
// first request of a tab's connection, which it hands to a TabSession. Runs on
// its own strand; callbacks of the gRPC clients post back to it.
class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(boost::asio::ip::tcp::socket&& socket, GatewayState& state);

  void Run();

 private:
  using Request = boost::beast::http::request<boost::beast::http::string_body>;

  void DoReadHeader();
  void OnReadHeader(boost::beast::error_code ec, size_t bytes);
  // /healthz, /readyz and /metrics, for orchestrators and Prometheus.
  void ServeOperator(absl::string_view path);
  void OnVerified(AuthVerdict verdict);
  void DoReadBody();
  void OnReadBody(boost::beast::error_code ec, size_t bytes);
  void Dispatch();
  void OnForwarded(ForwardOutcome outcome);

  // Answers and, unless the request's body was left unread or the client
  // asked to close, reads the next request.
  void Reply(const HttpReply& reply);
  void ReplyText(unsigned status, absl::string_view message);
  void Write(boost::beast::http::response<boost::beast::http::string_body> response);
  void OnWrite(bool keep_alive, boost::beast::error_code ec, size_t bytes);
  void DoClose();

  std::optional<std::string> Header(boost::beast::http::field field) const;
  std::optional<std::string> Header(absl::string_view name) const;
  std::string ClientAddress() const;

  boost::beast::tcp_stream stream_;
  GatewayState& state_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  std::string account_;
  bool body_read_ = false;
  std::optional<ForwardPlan> plan_;
  std::shared_ptr<ForwardHandle> call_;
  std::shared_ptr<void> response_;  // keeps the response alive during async_write
};

}  // namespace relay::gateway
