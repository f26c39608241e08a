#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "absl/strings/string_view.h"
#include "gateway/rpc/auth_client.h"
#include "gateway/net/gateway_state.h"
#include "gateway/core/http_framing.h"
#include "gateway/core/mcp_dispatcher.h"
#include "gateway/rpc/router_client.h"

namespace relay::gateway {

// One agent's HTTP/1.1 connection (keep-alive, one request at a time), or the
// first request of a tab's connection, which it hands to a TabSession.
// Answers are JSON, or SSE when the client accepts it and the tab sends
// something before its answer (progress, logs, requests to the agent); a GET
// turns the connection into the session's notification stream.
//
// Runs on its own strand: every member is touched only there; other threads
// (gRPC callbacks, the router's commands) use the Post* methods. Lives as long
// as its pending operations.
class HttpSession : public std::enable_shared_from_this<HttpSession>, public CallWaiter {
 public:
  HttpSession(boost::asio::ip::tcp::socket&& socket, GatewayState& state);

  // CallWaiter: any thread; posts to the strand.
  void OnCallEvent(std::string message) override;
  void OnCallDone(ForwardOutcome outcome) override;

  void Run();

  // For an open GET stream.
  void PostStreamEvent(uint64_t event_id, std::string message);
  void PostReannounce(size_t shard);
  // A notification of this gateway's own (the catalogue changed).
  void PostNotice(std::string message);
  void PostGoingAway();
  // The session was ended (DELETE): its stream, if this is it, ends.
  void PostSessionEnded(std::string session);

 private:
  enum class Phase { kReading, kAuthorizing, kForwarding, kStreaming, kClosed };
  // What happens once everything queued is written.
  enum class Then { kNothing, kReadNext, kClose };

  void DoReadHeader();
  // The header, once its first bytes are in (or were already buffered).
  void ReadHeaderBytes();
  void OnReadHeader(boost::beast::error_code ec, size_t bytes);
  void ServeOperator(absl::string_view path);
  void OnVerified(AuthVerdict verdict);
  void DoReadBody();
  void DiscardBody(uint64_t remaining);
  void ReplyTooLarge();
  void OnReadBody(boost::beast::error_code ec, size_t bytes);
  void Dispatch();
  void Apply(const PostDecision& decision);
  // Answers a batch's messages one after the other, then all at once.
  void RunBatch();
  void StartForward(ForwardPlan plan);
  void OnForwardEvent(std::string message);
  void OnForwarded(ForwardOutcome outcome);
  // Gives up the call in flight, if any (the tab is told).
  void CancelCall(RouterClient::CancelReason reason);
  // Sends a session event to the account's shard.
  void ToRouter(relay::v1::GatewayEvent event);
  void OpenStream(const std::string& session);
  void CloseStream();
  void SendStreamOpen(uint64_t last_event_id);

  // Notices a client that goes away while we wait or stream.
  void WatchPeer();
  void OnPeerData(boost::beast::error_code ec, size_t bytes);
  void ScheduleKeepAlive();

  // Output: whole responses, SSE headers and chunks, one write in flight.
  void Respond(int status, absl::string_view content_type, absl::string_view body,
               absl::string_view extra_headers = "");
  void Reply(const HttpReply& reply);
  void ReplyText(int status, absl::string_view message);
  void StartSse(absl::string_view extra_headers = "");
  void SendEvent(absl::string_view message, uint64_t event_id = 0);
  void EndSse();
  void Enqueue(std::string bytes);
  void DoWrite();
  void OnWrite(boost::beast::error_code ec, size_t bytes);
  void AfterWrites();
  void Close();
  void Drain();

  std::optional<std::string> Header(boost::beast::http::field field) const;
  std::optional<std::string> Header(absl::string_view name) const;
  std::string ClientAddress() const;
  void Touch(const std::string& session, bool force);

  boost::beast::tcp_stream stream_;
  GatewayState& state_;
  ConnectionSlot slot_;
  bool first_request_ = true;
  std::chrono::steady_clock::time_point drain_until_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  boost::asio::steady_timer keepalive_timer_;
  Phase phase_ = Phase::kReading;
  Then then_ = Then::kNothing;
  bool keep_alive_ = true;
  bool body_read_ = false;
  bool watching_ = false;
  bool resume_after_watch_ = false;
  bool sse_ = false;
  std::string account_;
  std::string client_address_;  // as the brake sees it; set when authsvc is asked
  AgentHeaders headers_;
  std::optional<ForwardPlan> plan_;
  std::vector<PostDecision> batch_;
  size_t batch_next_ = 0;
  std::vector<std::string> batch_answers_;
  // The call in flight, for Cancel; 0 when none.
  uint64_t call_ref_ = 0;
  uint64_t call_seq_ = 0;  // counts this connection's calls, for the timer's handlers
  boost::asio::steady_timer call_timer_;
  OutputQueue out_;
  // GET stream
  uint64_t stream_id_ = 0;
  std::string stream_session_;
};

}  // namespace relay::gateway
