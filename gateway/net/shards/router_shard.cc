#include "gateway/net/shards/router_shard.h"

#include <algorithm>
#include <utility>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/time/clock.h"
#include "common/clock.h"
#include "common/link/frame_arena.h"
#include "common/log.h"
#include "gateway/rpc/channel.h"

namespace relay::gateway {

using relay::v1::GatewayEvent;
using relay::v1::RouterBatch;
using relay::v1::RouterCommand;

namespace {

// Room for a call's event and its strings' heads (their bytes are moved in,
// not copied): for a CallStart the arena of Forward allocates nothing more (a
// CallResume with many answers may take a block from the heap).
constexpr size_t kEventBlockBytes = 1024;

ForwardOutcome ToOutcome(relay::v1::CallDone& done) {
  ForwardOutcome outcome;
  switch (done.outcome_case()) {
    case relay::v1::CallDone::kResult:
      outcome.kind = ForwardOutcome::Kind::kResult;
      outcome.payload = std::move(*done.mutable_result());
      outcome.view_line = std::move(*done.mutable_view_line());
      return outcome;
    case relay::v1::CallDone::kError:
      outcome.kind = ForwardOutcome::Kind::kError;
      outcome.payload = std::move(*done.mutable_error());
      return outcome;
    case relay::v1::CallDone::kFailure:
    case relay::v1::CallDone::OUTCOME_NOT_SET:
      break;
  }
  switch (done.failure().reason()) {
    case relay::v1::Failure::REASON_NO_TAB:
      outcome.kind = ForwardOutcome::Kind::kNoTab;
      break;
    case relay::v1::Failure::REASON_DISPLACED:
      outcome.kind = ForwardOutcome::Kind::kDisplaced;
      break;
    case relay::v1::Failure::REASON_CANCELLED:
      outcome.kind = ForwardOutcome::Kind::kCancelled;
      break;
    case relay::v1::Failure::REASON_SESSION_ENDED:
      outcome.kind = ForwardOutcome::Kind::kSessionEnded;
      break;
    case relay::v1::Failure::REASON_TOO_MANY_CALLS:
      outcome.kind = ForwardOutcome::Kind::kTooManyCalls;
      break;
    case relay::v1::Failure::REASON_NOT_PENDING:
      outcome.kind = ForwardOutcome::Kind::kNotPending;
      break;
    default:
      outcome.kind = ForwardOutcome::Kind::kTabGone;
      break;
  }
  return outcome;
}

}  // namespace

// One OpenLink call in flight: deletes itself once answered.
class RouterShard::Admission final : public common::CqTag {
 public:
  Admission(RouterShard& shard, relay::v1::Router::Stub& stub, grpc::CompletionQueue* cq)
      : shard_(shard) {
    // Not wait_for_ready: a router that is down is tried again on the
    // shard's backoff, and says why meanwhile.
    context_.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    reader_ = stub.AsyncOpenLink(&context_, relay::v1::OpenLinkRequest(), cq);
    reader_->Finish(&response_, &status_, static_cast<common::CqTag*>(this));
  }
  void Proceed(bool) override {
    shard_.OnAdmitted(status_, response_.port());
    delete this;
  }

 private:
  RouterShard& shard_;
  grpc::ClientContext context_;
  relay::v1::OpenLinkResponse response_;
  grpc::Status status_;
  std::unique_ptr<grpc::ClientAsyncResponseReader<relay::v1::OpenLinkResponse>> reader_;
};

RouterShard::RouterShard(size_t index, const std::string& address, const common::ServiceTls& tls,
                         std::shared_ptr<common::LinkTls> link_tls, std::string gateway_id,
                         RouterCommandSink& sink, std::atomic<uint64_t>& next_ref,
                         common::CqLoop& loop, boost::asio::io_context& io)
    : index_(index), address_(address), link_tls_(std::move(link_tls)),
      gateway_id_(std::move(gateway_id)), sink_(sink), next_ref_(next_ref), loop_(loop), io_(io),
      stub_(relay::v1::Router::NewStub(MakeChannel(address, tls))) {
  auto parts = common::SplitHostPort(address);
  host_ = parts.ok() ? parts->first : address;
}

void RouterShard::Start() {
  absl::MutexLock lock(&mu_);
  if (life_.Begin()) {
    AdmitLocked();
  }
}

void RouterShard::AdmitLocked() { new Admission(*this, *stub_, loop_.cq()); }

void RouterShard::OnAdmitted(const grpc::Status& status, uint32_t port) {
  if (!status.ok() || port == 0) {
    absl::Status why = status.ok() ? absl::UnavailableError("the router named no link port")
                                   : absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                                                  status.error_message());
    LogDown(why);
    absl::MutexLock lock(&mu_);
    if (auto wait = life_.AdmissionFailed(why.code())) {
      ScheduleRelinkLocked(*wait);
    }
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    if (!life_.Admitted()) {
      return;  // stopped meanwhile: no link is made
    }
    // Published, with its hello first in its queue, before it connects:
    // nothing it does can run before link_ names it.
    link_ = std::make_shared<RouterLink>(*this, io_, link_tls_);
    GatewayEvent hello;
    hello.mutable_hello()->set_gateway_id(gateway_id_);
    link_->Send(hello);
    link_->Connect(host_, std::to_string(port));  // posted to the I/O thread: nothing runs here
  }
  // Announces this gateway's tabs and streams of this shard; they queue behind the hello.
  // Outside the lock (it posts to every session); Stop() waits for Announced().
  sink_.OnLinkUp(index_);
  absl::MutexLock lock(&mu_);
  life_.Announced();
}

void RouterShard::LogDown(const absl::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    std::string reason(status.message());
    if (life_.stopping() || reason == last_down_) {
      return;
    }
    last_down_ = std::move(reason);
  }
  common::LogWarn("router link ended", {{"router", address_}, {"error", status.message()}});
}

bool RouterShard::Send(const GatewayEvent& event) {
  absl::MutexLock lock(&mu_);
  return link_ != nullptr && link_->Send(event);
}

uint64_t RouterShard::Forward(ForwardRequest request, std::shared_ptr<CallWaiter> waiter) {
  if (!up_.load()) {
    // An agent must hear at once that its shard is down.
    waiter->OnCallDone(ForwardOutcome{ForwardOutcome::Kind::kRouterUnavailable, {}, {}});
    return 0;
  }
  uint64_t ref = next_ref_.fetch_add(1);
  {
    absl::MutexLock lock(&calls_mu_);
    calls_.emplace(ref, std::move(waiter));
  }
  // The event lives on an arena in this frame: its message, its call's and the
  // strings moved in cost no allocation each, and the link serialises it
  // before it is gone.
  common::FrameArena<kEventBlockBytes> arena;
  GatewayEvent& event = arena.Make<GatewayEvent>();
  if (request.resume_call_id != 0) {
    auto* resume = event.mutable_call_resume();
    resume->set_call_ref(ref);
    resume->set_account(std::move(request.account));
    resume->set_call_id(request.resume_call_id);
    resume->set_round(request.resume_round);
    resume->set_trace_id(std::move(request.trace_id));
    for (auto& [id, payload] : request.answers) {
      auto* answer = resume->add_answers();
      answer->set_tab_request_id(std::move(id));
      answer->set_payload(std::move(payload));
    }
  } else {
    BuildStart(request, ref, event.mutable_call_start());
  }
  if (!Send(event)) {
    // The link ended just now; if its end has not failed this call yet, we do.
    if (auto taken = Take(ref)) {
      taken->OnCallDone(ForwardOutcome{ForwardOutcome::Kind::kRouterUnavailable, {}, {}});
    }
  }
  return ref;
}

void RouterShard::BuildStart(ForwardRequest& request, uint64_t ref, relay::v1::CallStart* start) {
  start->set_call_ref(ref);
  start->set_account(std::move(request.account));
  start->set_session_id(std::move(request.session_id));
  start->set_method(std::move(request.method));
  start->set_params(std::move(request.params));
  start->set_request_id(std::move(request.request_id));
  start->set_progress_token(std::move(request.progress_token));
  start->set_trace_id(std::move(request.trace_id));
  start->set_stateless(request.stateless);
}

bool RouterShard::Park(uint64_t ref, uint32_t round, absl::Duration ttl) {
  if (Take(ref) == nullptr) {
    return false;  // it ended meanwhile: its outcome is on its way to the waiter
  }
  GatewayEvent event;
  event.mutable_call_park()->set_call_ref(ref);
  event.mutable_call_park()->set_round(round);
  event.mutable_call_park()->set_ttl_ms(
      static_cast<uint32_t>(std::max<int64_t>(1, absl::ToInt64Milliseconds(ttl))));
  Send(event);
  return true;
}

bool RouterShard::Cancel(uint64_t ref, RouterClient::CancelReason reason) {
  std::shared_ptr<CallWaiter> waiter = Take(ref);
  if (waiter == nullptr) {
    return false;  // it ended meanwhile
  }
  GatewayEvent event;
  event.mutable_call_cancel()->set_call_ref(ref);
  ForwardOutcome::Kind kind = ForwardOutcome::Kind::kCancelled;
  switch (reason) {
    case RouterClient::CancelReason::kDeadline:
      event.mutable_call_cancel()->set_reason("the call's deadline passed");
      kind = ForwardOutcome::Kind::kTimeout;
      break;
    case RouterClient::CancelReason::kShutdown:
      event.mutable_call_cancel()->set_reason("the agent's gateway is shutting down");
      kind = ForwardOutcome::Kind::kShuttingDown;
      break;
    case RouterClient::CancelReason::kAgentGone:
      event.mutable_call_cancel()->set_reason("the agent cancelled the request");
      break;
  }
  Send(event);
  waiter->OnCallDone(ForwardOutcome{kind, {}, {}});
  return true;
}

size_t RouterShard::CallsInFlight() {
  absl::MutexLock lock(&calls_mu_);
  return calls_.size();
}

void RouterShard::CancelAll(RouterClient::CancelReason reason) {
  std::vector<uint64_t> refs;
  {
    absl::MutexLock lock(&calls_mu_);
    for (const auto& [ref, waiter] : calls_) {
      refs.push_back(ref);
    }
  }
  for (uint64_t ref : refs) {
    Cancel(ref, reason);
  }
}

void RouterShard::OnBatch(RouterBatch& batch) {
  // Closed however the loop ends: a batch left open would hold back every
  // later post of the links' thread.
  struct Scope {
    explicit Scope(RouterCommandSink& sink) : sink(sink) { sink.BeginBatch(); }
    ~Scope() { sink.EndBatch(); }
    RouterCommandSink& sink;
  } scope(sink_);
  for (RouterCommand& command : *batch.mutable_commands()) {
    switch (command.command_case()) {
      case RouterCommand::kCallEvent:
        OnCallEvent(*command.mutable_call_event());
        break;
      case RouterCommand::kCallDone:
        OnCallDone(*command.mutable_call_done());
        break;
      default:
        sink_.OnCommand(command);
        break;
    }
  }
}

void RouterShard::OnCallEvent(relay::v1::CallEvent& event) {
  // Under the lock: a Cancel on another thread takes the call only after
  // this event is handed over, so the waiter hears it before the end.
  // (OnCallEvent only posts to the waiter's executor.)
  absl::MutexLock lock(&calls_mu_);
  auto it = calls_.find(event.call_ref());
  if (it != calls_.end()) {
    it->second->OnCallEvent(event.call_ref(), std::move(*event.mutable_message()));
  }
}

void RouterShard::OnCallDone(relay::v1::CallDone& done) {
  if (std::shared_ptr<CallWaiter> waiter = Take(done.call_ref())) {
    waiter->OnCallDone(ToOutcome(done));
  }
}

void RouterShard::OnLinkEnded(RouterLink* link, const absl::Status& status) {
  // Every call sent on it is lost: the router that held it is gone, or has
  // cancelled it at its tab. (New calls fail at once: the link is not up.)
  up_.store(false);
  absl::flat_hash_map<uint64_t, std::shared_ptr<CallWaiter>> lost;
  {
    absl::MutexLock lock(&calls_mu_);
    lost.swap(calls_);
  }
  for (auto& [ref, waiter] : lost) {
    waiter->OnCallDone(ForwardOutcome{ForwardOutcome::Kind::kRouterUnavailable, {}, {}});
  }
  bool stopping;
  {
    absl::MutexLock lock(&mu_);
    stopping = life_.stopping();
  }
  if (!stopping) {
    LogDown(status);
    sink_.OnLinkDown(index_);
  }
  // Last: once the link's end moves the shard's life, Stop() may return and the shard go.
  absl::MutexLock lock(&mu_);
  if (link_.get() != link) {
    return;  // not the shard's link (never so: a link is made only after the last one ended)
  }
  link_ = nullptr;
  if (auto wait = life_.LinkEnded(common::MonotonicNow())) {
    ScheduleRelinkLocked(*wait);
  }
}

void RouterShard::OnLinkEstablished() {
  absl::MutexLock lock(&mu_);
  life_.Established(common::MonotonicNow());
  last_down_.clear();
  up_.store(life_.up());
}

bool RouterShard::Flushed() {
  absl::MutexLock lock(&mu_);
  return link_ == nullptr || link_->Flushed();
}

void RouterShard::Stop() {
  std::shared_ptr<RouterLink> link;
  grpc::Alarm* alarm = nullptr;
  {
    absl::MutexLock lock(&mu_);
    switch (life_.Stop()) {
      case ShardLife::StopAction::kCloseLink:
        link = link_;
        break;
      case ShardLife::StopAction::kCancelAlarm:
        alarm = alarm_.get();
        break;
      case ShardLife::StopAction::kNone:
        break;
    }
  }
  // Outside the lock: a cancel may run the reactions it causes at once.
  if (alarm != nullptr) {
    alarm->Cancel();
  }
  if (link != nullptr) {
    link->Close(absl::CancelledError("the gateway is stopping"));
  }
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](ShardLife* life) { return life->stopped(); }, &life_));
}

std::shared_ptr<CallWaiter> RouterShard::Take(uint64_t ref) {
  absl::MutexLock lock(&calls_mu_);
  auto it = calls_.find(ref);
  if (it == calls_.end()) {
    return nullptr;
  }
  std::shared_ptr<CallWaiter> waiter = std::move(it->second);
  calls_.erase(it);
  return waiter;
}

void RouterShard::ScheduleRelinkLocked(absl::Duration wait) {
  alarm_ = std::make_unique<grpc::Alarm>();
  alarm_->Set(loop_.cq(), absl::ToChronoTime(absl::Now() + wait),
              static_cast<common::CqTag*>(&relink_));
}

void RouterShard::OnRelinkAlarm(bool fired) {
  absl::MutexLock lock(&mu_);
  if (!fired) {
    life_.AlarmCancelled();
  } else if (life_.AlarmFired()) {
    AdmitLocked();
  }
}

}  // namespace relay::gateway
