// RouterCore, the 2026-07-28 half: calls parked between the rounds of a
// multi round-trip request (the agent was answered input_required and will
// retry, maybe through another gateway), resumed by that retry, or expired.
#include <algorithm>

#include "router/core/router_core.h"

namespace relay::router {

using relay::v1::Failure;
using relay::v1::WatchEvent;

void RouterCore::OnCallPark(uint64_t link_id, const relay::v1::CallPark& park, absl::Time now) {
  uint64_t call_id = calls_.FindByOrigin(CallOrigin{link_id, park.call_ref()});
  Call* call = calls_.FindMutable(call_id);
  // A park that its own retry overtook (the retry came by another link) is stale.
  if (call == nullptr || !call->stateless || park.round() <= call->round) {
    return;
  }
  calls_.Rehome(call_id, CallOrigin{});
  call->round = park.round();
  call->parked = true;
  call->parked_until = now + absl::Milliseconds(park.ttl_ms());
  parked_.insert(call_id);
}

void RouterCore::KeepAnswer(uint64_t call_id, const Call& call, const relay::v1::TabReply& reply,
                            absl::Time now) {
  KeptAnswers::Answer kept;
  kept.account = call.account;
  kept.session = call.session;
  kept.is_tool_call = call.is_tool_call;
  kept.is_error = reply.is_error();
  kept.payload = reply.payload();
  // As long as the retry's requestState is good: the park's TTL (the call's
  // deadline); before the park, the longest a call may last.
  kept.until = call.parked ? call.parked_until : now + options_.kept_answer_ttl;
  kept_.Keep(call_id, std::move(kept));
}

void RouterCore::OnCallResume(uint64_t link_id, relay::v1::CallResume& resume, absl::Time now,
                              Outbox& out) {
  Call* call = calls_.FindMutable(resume.call_id());
  // Only the retry of the round the call waits for resumes it: a duplicate of
  // an older round's retry must not take a later round's questions. The
  // retry may overtake its round's park (it comes by another link): then the
  // call is still with the gateway that asked, one round behind.
  bool resumable =
      call != nullptr && call->stateless && call->account == resume.account() &&
      ((call->parked && resume.round() == call->round) ||
       (!call->parked && resume.round() == call->round + 1));
  if (!resumable) {
    auto* done = AddCommand(out, link_id).mutable_call_done();
    done->set_call_ref(resume.call_ref());
    if (call == nullptr) {
      // The tab answered between the rounds: its answer is the retry's result.
      if (std::optional<KeptAnswers::Answer> kept =
              kept_.Take(resume.call_id(), resume.account(), now)) {
        if (kept->is_error) {
          done->set_error(std::move(kept->payload));
        } else {
          if (kept->is_tool_call) {
            done->set_view_line(sessions_.TakePendingLine(kept->session));
          }
          done->set_result(std::move(kept->payload));
        }
        return;
      }
    }
    // Answered, expired or resumed by another retry meanwhile; another
    // account's call is answered exactly the same.
    done->mutable_failure()->set_reason(Failure::REASON_NOT_PENDING);
    return;
  }
  calls_.Rehome(resume.call_id(), CallOrigin{link_id, resume.call_ref()});
  call->parked = false;
  call->round = resume.round();
  call->trace_id = resume.trace_id();
  parked_.erase(resume.call_id());
  for (relay::v1::AgentAnswer& answer : *resume.mutable_answers()) {
    auto it = std::find_if(call->pending.begin(), call->pending.end(), [&](const auto& p) {
      return p.first == answer.tab_request_id();
    });
    if (it == call->pending.end()) {
      continue;  // not asked, or answered already
    }
    call->pending_bytes -= it->second.size();
    call->pending.erase(it);
    auto* response = AddCommand(out, call->tab.link_id).mutable_tab_response();
    response->set_tab_id(call->tab.tab_id);
    response->set_tab_request_id(answer.tab_request_id());
    response->set_payload(std::move(*answer.mutable_payload()));
  }
  // What the retry did not answer is asked again.
  for (const auto& [id, message] : call->pending) {
    ToAgent(*call, message, out);
  }
}

void RouterCore::ExpireParked(absl::Time now, Outbox& out) {
  std::vector<uint64_t> expired;
  for (uint64_t call_id : parked_) {
    const Call* call = calls_.Find(call_id);
    if (call == nullptr || call->parked_until <= now) {
      expired.push_back(call_id);
    }
  }
  for (uint64_t call_id : expired) {
    parked_.erase(call_id);
    if (std::optional<Call> call = calls_.Take(call_id)) {
      ++counts_.cancelled;
      if (WatchEvent* event = Watch(WatchEvent::CALL_FAILED)) {
        event->set_account(call->account);
        event->set_trace_id(call->trace_id);
        event->set_reason("expired: the agent did not retry with its answers in time");
      }
      CancelAtTab(call_id, call->tab, "the agent did not answer in time", out);
    }
  }
}

}  // namespace relay::router
