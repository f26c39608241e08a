// HttpSession, the forwarded call: its start on the router client, the
// watch for the agent going away once it lasts, its deadline and cancel, its
// events and its outcome answered (a plain reply or an SSE stream). The rest
// of the session is in http_session.cc.
#include <algorithm>
#include <chrono>
#include <utility>


#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/text.h"
#include "gateway/net/agent/http_session.h"
#include "gateway/net/agent/lasting_calls.h"
#include "gateway/net/gathered_posts.h"

namespace relay::gateway {

namespace asio = boost::asio;

namespace {

// A forwarded call starts watching for its agent going away after this.
constexpr auto kWatchAfter = std::chrono::milliseconds(20);

}  // namespace

// ---------------------------------------------------------- forwarded call --

void HttpSession::StartForward(ForwardPlan plan) {
  phase_ = Phase::kForwarding;
  plan_ = std::move(plan);
  state_.metrics.forwards.Add();
  stream_.expires_never();
  // The router needs the params only once: they move; the rest is small.
  const ForwardRequest& planned = plan_->request;
  // The relay's id of the call: this gateway's id and a number, in the log
  // lines of every service that handles it (at --log_level=debug).
  trace_id_ = absl::StrCat(state_.gateway_id, "-", state_.calls_started.fetch_add(1) + 1);
  ForwardRequest request{planned.account, planned.session_id, planned.method,
                         std::move(plan_->request.params), planned.request_id,
                         planned.progress_token, trace_id_, false, 0, 0, {}};
  request.stateless = planned.stateless;
  request.resume_call_id = planned.resume_call_id;
  request.resume_round = planned.resume_round;
  request.answers = std::move(plan_->request.answers);
  call_ref_ = state_.router->Forward(std::move(request), shared_from_this());
  // Most calls are answered within milliseconds: watching the socket for the
  // agent going away costs system calls, so it starts only when a call lasts.
  auto now = std::chrono::steady_clock::now();
  call_started_ = now;
  call_deadline_ = now + absl::ToChronoMilliseconds(state_.dispatcher->options().call_timeout);
  lasting_->Add(std::min(call_deadline_, now + kWatchAfter), weak_from_this(), ++forwards_);
}

void HttpSession::OnCallLasting(uint64_t call) {
  if (phase_ != Phase::kForwarding || call != forwards_ || call_ref_ == 0) {
    return;  // answered or given up meanwhile: this connection may be on another call by now
  }
  in_.Watch();
  StartTimer(call_deadline_, &HttpSession::OnCallDeadline);
}

void HttpSession::OnCallDeadline() {
  CancelCall(RouterClient::CancelReason::kDeadline);
}

void HttpSession::CancelCall(RouterClient::CancelReason reason) {
  if (phase_ == Phase::kForwarding && call_ref_ != 0) {
    StopTimer();
    // The waiter hears kTimeout or kCancelled through OnCallDone. When the
    // call's outcome won (it is on its way), the call stays this session's
    // until it comes: its events handed over before it still belong to it.
    if (state_.router->Cancel(account_, call_ref_, reason)) {
      call_ref_ = 0;
    }
  }
}

void HttpSession::OnCallEvent(uint64_t call_ref, std::string message) {
  // At once, under the router client's lock, through the thread's mailbox:
  // before any end of the call handed over after it (a cancel's, from this
  // session's own thread, or the batch's). A plain post could be overtaken by
  // a drain of the mailbox queued before it.
  GatheredPosts::PostNow(stream_.get_executor(), [self = shared_from_this(), call_ref,
                                                  message = std::move(message)]() mutable {
    // The mailbox runs its items between the thread's socket events: an event
    // handed over just before its call was parked (or cancelled) may run once
    // this connection forwards its next call. It is not that call's.
    if (call_ref == self->call_ref_) {
      self->OnForwardEvent(std::move(message));
    }
  });
}

void HttpSession::OnCallDone(ForwardOutcome outcome) {
  // Gathered with the rest of its link batch (an event went at once, before it).
  GatheredPosts::Post(stream_.get_executor(),
                      [self = shared_from_this(), outcome = std::move(outcome)]() mutable {
    self->OnForwarded(std::move(outcome));
  });
}

void HttpSession::OnForwardEvent(std::string message) {
  if (phase_ != Phase::kForwarding) {
    return;
  }
  if (plan_->modern) {
    return OnModernEvent(std::move(message));
  }
  if (!headers_.accepts_sse || !batch_.empty()) {
    // This client cannot receive it: a notification is dropped, a request
    // is answered with an error so that the tab does not wait for ever.
    PostDecision refusal;
    refusal.session = plan_->request.session_id;
    refusal.effect = state_.dispatcher->RefuseTabRequest(message);
    return Apply(refusal);
  }
  if (!out_.in_sse()) {
    state_.metrics.CountResponse(200);
    // The head of a response after which the connection closes says so (see AgentStream).
    out_.StartSse(keep_alive_ ? "" : "Connection: close\r\n");
  }
  out_.SendEvent(state_.dispatcher->AgentEvent(*plan_, std::move(message)));
}

void HttpSession::OnForwarded(ForwardOutcome outcome) {
  if (phase_ != Phase::kForwarding) {
    return;
  }
  call_ref_ = 0;
  StopTimer();
  round_.clear();
  round_timer_.cancel();
  if (override_reply_) {
    phase_ = Phase::kReading;
    return AnswerCall(*std::exchange(override_reply_, std::nullopt));
  }
  phase_ = Phase::kReading;  // answering; the watch, if any, goes on
  state_.metrics.forward_outcomes[static_cast<size_t>(outcome.kind)].Add();
  auto elapsed = std::chrono::steady_clock::now() - call_started_;
  state_.metrics.forward_seconds.Observe(std::chrono::duration<double>(elapsed).count());
  if (common::LogEnabled(common::LogLevel::kDebug)) {
    common::Log(common::LogLevel::kDebug, "call finished",
                {{"call", trace_id_},
                 // A proxy's id of the request (nginx: $request_id), bounded.
                 {"request_id", common::TruncateUtf8(in_.Header("x-request-id").value_or(""), 64)},
                 {"account", account_},
                 {"method", plan_->request.method},
                 {"outcome", ForwardOutcome::Name(outcome.kind)},
                 {"ms", std::chrono::duration<double, std::milli>(elapsed).count()}});
  }
  HttpReply reply = state_.dispatcher->FinishForward(*plan_, std::move(outcome));
  if (!batch_.empty()) {
    AddBatchAnswer(std::move(reply.body), plan_->id);
    return RunBatch();
  }
  AnswerCall(reply);
}

void HttpSession::AnswerCall(const HttpReply& reply) {
  if (!out_.in_sse()) {
    return Reply(reply);
  }
  out_.SendEvent(reply.body);
  out_.EndSse(keep_alive_);
}

}  // namespace relay::gateway
