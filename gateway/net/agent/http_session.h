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
#include "gateway/core/request_gate.h"
#include "gateway/net/agent/agent_admission.h"
#include "gateway/net/agent/lasting_calls.h"
#include "gateway/net/gateway_state.h"
#include "gateway/net/agent/request_reader.h"
#include "gateway/net/agent/response_writer.h"
#include "gateway/core/auth_client.h"
#include "gateway/core/router_client.h"

namespace relay::gateway {

// One agent's HTTP/1.1 connection: requests read one at a time (keep-alive,
// pipelined bytes kept), each checked (RequestGate, the bearer), dispatched
// (McpDispatcher) and answered, a forwarded call waiting for its tab with SSE
// events when the client accepts them. A tab's upgrade goes to a TabSession
// and a GET stream to an AgentStream, which take the connection over.
//
// The exchange's rules are in core/ (RequestGate, McpDispatcher,
// router_events); its input and output in RequestReader and ResponseWriter.
// Runs on its I/O thread: every member is touched only there; the router's
// callbacks (CallWaiter) post to it. Lives as long as its pending operations.
class HttpSession : public std::enable_shared_from_this<HttpSession>,
                    public CallWaiter,
                    public LastingCallOwner,
                    public AgentAdmission::Owner,
                    public ReaderOwner,
                    public WriterOwner {
 public:
  HttpSession(boost::asio::ip::tcp::socket&& socket, GatewayState& state);

  void Run();

  // CallWaiter: any thread; posts to its I/O thread.
  void OnCallEvent(uint64_t call_ref, std::string message) override;
  void OnCallDone(ForwardOutcome outcome) override;

  // AgentAdmission::Owner, ReaderOwner and WriterOwner.
  std::shared_ptr<void> KeepAlive() override { return shared_from_this(); }
  void OnAdmitted(std::string account, std::string role) override;
  void OnRefused(const GateDecision& refusal) override;
  void OnHeader() override;
  void OnBody() override;
  void OnHeaderTooLarge() override;
  void OnBodyTooLarge() override;
  void OnPeerGone() override;
  void OnResponseWritten(AfterResponse next) override;
  void OnWriteFailed() override;
  // LastingCallOwner: the call has lasted; the agent's socket is watched from now.
  void OnCallLasting(uint64_t call) override;

 private:
  enum class Phase { kReading, kForwarding, kClosed };

  void ReadNext();

  // Dispatching.
  void Dispatch();
  void Apply(const PostDecision& decision);
  // Adds a forwarded batch message's answer; one that would take the batch's
  // answers past what one response may hold becomes an error for id (the tab
  // did the work; the agent hears it was too large to carry).
  void AddBatchAnswer(std::string body, const nlohmann::json& id);
  // Answers a batch's messages one after the other, then all at once.
  void RunBatch();
  // The connection goes to a session of another kind (a tab's, a stream's): this one ends,
  // and the socket leaves Beast's stream (whose timers the others have no use for).
  boost::asio::ip::tcp::socket HandOver();
  void OpenStream(const std::string& session);
  void OpenListen(ListenPlan plan);

  // The forwarded call.
  void StartForward(ForwardPlan plan);
  void OnCallDeadline();
  void OnForwardEvent(std::string message);
  void OnForwarded(ForwardOutcome outcome);
  // The answer of the call: on its SSE stream if one is open, else as is.
  void AnswerCall(const HttpReply& reply);
  // 2026-07-28 (http_session_modern.cc): the tab's requests to the agent
  // gather into a round, which is answered input_required when it closes, and
  // the call is parked.
  void OnModernEvent(std::string message);
  void CloseRound();
  // Gives up the call in flight, if any (the tab is told).
  void CancelCall(RouterClient::CancelReason reason);

  // The call's deadline, once it has lasted (LastingCalls tells it when).
  void StartTimer(std::chrono::steady_clock::time_point at, void (HttpSession::*then)());
  void StopTimer();

  // Output.
  // mcp_path: counted in relay_gateway_http_responses_total (not /metrics or probes).
  void Respond(int status, absl::string_view content_type, absl::string_view body,
               absl::string_view extra_headers = "", bool mcp_path = true);
  void Reply(const HttpReply& reply);
  void Refuse(const GateDecision& refusal);
  // The protected resource metadata (RFC 9728), for GET and a CORS preflight.
  void AnswerMetadata(absl::string_view method);
  void Close();

  std::string ClientAddress() const;
  // The SHA-256 (hex) of the request's bearer: how a revocation names it.
  std::string BearerSha256() const;
  void ToRouter(relay::v1::GatewayEvent event);

  boost::beast::tcp_stream stream_;
  GatewayState& state_;
  ConnectionSlot slot_;
  AgentAdmission admission_;
  RequestReader in_;
  ResponseWriter out_;
  Phase phase_ = Phase::kReading;
  bool keep_alive_ = true;
  LastingCalls* lasting_;  // its I/O thread's
  boost::asio::steady_timer timer_;
  uint64_t timer_seq_ = 0;  // a handler of an earlier arming does nothing
  std::string account_;
  AgentHeaders headers_;
  std::optional<ForwardPlan> plan_;
  std::vector<PostDecision> batch_;
  size_t batch_next_ = 0;
  std::vector<std::string> batch_answers_;
  size_t batch_bytes_ = 0;  // of batch_answers_, bounded by what one response may queue
  // The call in flight, for Cancel; 0 when none.
  uint64_t call_ref_ = 0;
  // Of the forwarded calls this connection started: which one LastingCalls means.
  uint64_t forwards_ = 0;
  std::chrono::steady_clock::time_point call_deadline_;
  std::chrono::steady_clock::time_point call_started_;
  std::string trace_id_;  // of the call in flight or last answered
  // The open round of a 2026-07-28 call, and its timer.
  std::vector<RoundRequest> round_;
  boost::asio::steady_timer round_timer_;
  // The agent's answer when the call was given up for a reason of the relay's
  // own (-32021), replacing what the cancellation would say.
  std::optional<HttpReply> override_reply_;
};

}  // namespace relay::gateway
