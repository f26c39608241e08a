// HttpSession, the 2026-07-28 half: a listen stream handed over, and the
// rounds of a call's requests to its agent (multi round-trip requests): the
// requests of one round are gathered, answered input_required, and the call
// parked at the router until the agent's retry, on any gateway.
#include <boost/asio/post.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/slab_pool.h"
#include "gateway/core/tab_protocol.h"
#include "gateway/net/agent/agent_stream.h"
#include "gateway/net/agent/http_session.h"

namespace relay::gateway {

namespace beast = boost::beast;

namespace {

// A tab's requests to a 2026-07-28 agent sent within this of the first share
// one input_required round (TAB-PROTOCOL.md).
constexpr auto kRoundWindow = std::chrono::milliseconds(20);

}  // namespace

void HttpSession::OpenListen(ListenPlan plan) {
  // The router fans out to sessions: a listen stream has one of its own,
  // named after its token (so that one agent counts once) and for this
  // stream only; it ends with the stream.
  std::string session = absl::StrCat("l.", headers_.token_key, ".", state_.gateway_id, ".",
                                     state_.calls_started.fetch_add(1) + 1);
  common::MakeSlabShared<AgentStream>(HandOver(), state_.ForStream(), std::move(slot_), account_,
                                      headers_.role, std::move(session), BearerSha256(),
                                      std::move(plan.filter))
      ->Run(0, admission_.revocation_mark());
}

void HttpSession::OnModernEvent(std::string message) {
  uint64_t call_id = 0;
  std::string tab_request_id;
  if (absl::StrContains(message, kTabRequestIdPrefix)) {
    auto parsed = nlohmann::json::parse(message, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_object() && parsed.contains("method") && parsed.contains("id") &&
        ParseAgentReplyId(parsed["id"], &call_id, &tab_request_id)) {
      // A request of the tab: never sent on the stream in this era.
      round_.push_back(RoundRequest{call_id, std::move(tab_request_id), std::move(message)});
      if (round_.size() == 1) {
        round_timer_.expires_after(kRoundWindow);
        round_timer_.async_wait([self = shared_from_this(), ref = call_ref_](beast::error_code ec) {
          if (!ec && self->phase_ == Phase::kForwarding && self->call_ref_ == ref) {
            self->CloseRound();
          }
        });
      }
      return;
    }
  }
  if (!headers_.accepts_sse || !state_.dispatcher->PassesModern(*plan_, message)) {
    return;
  }
  if (!out_.in_sse()) {
    state_.metrics.CountResponse(200);
    // The head of a response after which the connection closes says so (see AgentStream).
    out_.StartSse(keep_alive_ ? "" : "Connection: close\r\n");
  }
  out_.SendEvent(state_.dispatcher->AgentEvent(*plan_, std::move(message)));
}

void HttpSession::CloseRound() {
  RoundDecision decision =
      state_.dispatcher->DecideRound(account_, *plan_, std::exchange(round_, {}), absl::Now());
  if (decision.reply && decision.cancel_call) {
    // The call is taken back before the tab hears anything of this round: the links run on
    // another I/O thread, and a refusal sent first could reach the tab, whose answer to the
    // call (caused by that refusal) would then come back and win before the cancel took it.
    // Only an outcome that was already on its way (the tab answered on its own) still wins.
    StopTimer();
    if (state_.router->Cancel(account_, call_ref_, RouterClient::CancelReason::kAgentGone)) {
      call_ref_ = 0;
      override_reply_ = std::move(decision.reply);
    }
  }
  for (SessionEffect& effect : decision.to_tab) {
    PostDecision answer;
    answer.session = plan_->request.session_id;
    answer.effect = std::move(effect);
    Apply(answer);
  }
  if (!decision.reply || decision.cancel_call) {
    return;  // answered from what the agent had sent (the call goes on), or cancelled above
  }
  // The call waits in the tab for the retry, which may come to any gateway;
  // unless it ended meanwhile, and its outcome, on its way, answers instead.
  if (!state_.router->Park(account_, call_ref_, plan_->modern->round,
                           state_.dispatcher->options().call_timeout)) {
    return;
  }
  call_ref_ = 0;
  state_.metrics.forward_outcomes[static_cast<size_t>(ForwardOutcome::Kind::kInputRequired)].Add();
  StopTimer();
  phase_ = Phase::kReading;
  AnswerCall(*decision.reply);
}

}  // namespace relay::gateway
