#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "absl/strings/string_view.h"
#include "gateway/core/mcp_dispatcher.h"
#include "gateway/net/gateway_state.h"
#include "gateway/net/response_writer.h"
#include "gateway/rpc/auth_client.h"
#include "gateway/rpc/router_client.h"

namespace relay::gateway {

// One agent's HTTP/1.1 connection: requests read one at a time (keep-alive,
// pipelined bytes kept), each checked (RequestGate, the bearer), dispatched
// (McpDispatcher) and answered, a forwarded call waiting for its tab with SSE
// events when the client accepts them. A tab's upgrade goes to a TabSession
// and a GET stream to an AgentStream, which take the connection over.
//
// Runs on its own strand: every member is touched only there; the router's
// callbacks (CallWaiter) post to it. Lives as long as its pending operations.
//
// One read at most is in flight on the socket: the wait for the next
// request's first bytes and, while a call lasts, the watch for the agent
// going away are the same read, so the end of an answer never has to stop a
// watch before it reads on.
class HttpSession : public std::enable_shared_from_this<HttpSession>,
                    public CallWaiter,
                    public WriterOwner {
 public:
  HttpSession(boost::asio::ip::tcp::socket&& socket, GatewayState& state);

  void Run();

  // CallWaiter: any thread; posts to the strand.
  void OnCallEvent(std::string message) override;
  void OnCallDone(ForwardOutcome outcome) override;

  // WriterOwner.
  std::shared_ptr<void> KeepAlive() override { return shared_from_this(); }
  void OnResponseWritten(AfterResponse next) override;
  void OnWriteFailed() override;

 private:
  enum class Phase { kIdle, kReading, kAuthorizing, kForwarding, kClosed };

  // Reading.
  void DoReadHeader();
  void ReadHeaderBytes();
  void ReadSome();
  void OnBytes(boost::beast::error_code ec, size_t bytes);
  void OnReadHeader(boost::beast::error_code ec, size_t bytes);
  void ServeOperator(absl::string_view path);
  void Authorize();
  void OnVerified(AuthVerdict verdict);
  void DoReadBody();
  void DiscardBody(uint64_t remaining);
  void OnReadBody(boost::beast::error_code ec, size_t bytes);

  // Dispatching.
  void Dispatch();
  void Apply(const PostDecision& decision);
  // Answers a batch's messages one after the other, then all at once.
  void RunBatch();
  void OpenStream(const std::string& session);

  // The forwarded call.
  void StartForward(ForwardPlan plan);
  void OnCallLasting();
  void OnCallDeadline();
  void OnForwardEvent(std::string message);
  void OnForwarded(ForwardOutcome outcome);
  // Gives up the call in flight, if any (the tab is told).
  void CancelCall(RouterClient::CancelReason reason);

  // The one timer: the wait for the next request, or the call's watch and deadline.
  void StartTimer(std::chrono::steady_clock::time_point at, void (HttpSession::*then)());
  void StopTimer();
  void OnIdleTimeout();

  // Output.
  void Respond(int status, absl::string_view content_type, absl::string_view body,
               absl::string_view extra_headers = "");
  void Reply(const HttpReply& reply);
  void ReplyText(int status, absl::string_view message);
  void ReplyTooLarge();
  void Close();

  std::optional<std::string> Header(boost::beast::http::field field) const;
  std::optional<std::string> Header(absl::string_view name) const;
  std::string ClientAddress() const;
  void ToRouter(relay::v1::GatewayEvent event);

  boost::beast::tcp_stream stream_;
  GatewayState& state_;
  ConnectionSlot slot_;
  ResponseWriter out_;
  bool first_request_ = true;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  Phase phase_ = Phase::kReading;
  bool keep_alive_ = true;
  bool body_read_ = false;
  bool read_in_flight_ = false;
  boost::asio::steady_timer timer_;
  uint64_t timer_seq_ = 0;  // a handler of an earlier arming does nothing
  std::string account_;
  std::string client_address_;  // as the brake sees it; set when authsvc is asked
  AgentHeaders headers_;
  std::optional<ForwardPlan> plan_;
  std::vector<PostDecision> batch_;
  size_t batch_next_ = 0;
  std::vector<std::string> batch_answers_;
  // The call in flight, for Cancel; 0 when none.
  uint64_t call_ref_ = 0;
  std::chrono::steady_clock::time_point call_deadline_;
};

}  // namespace relay::gateway
