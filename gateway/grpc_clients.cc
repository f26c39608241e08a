#include "gateway/grpc_clients.h"

#include <atomic>
#include <deque>
#include <random>

#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "gateway/shard_picker.h"
#include "relay/v1/auth.grpc.pb.h"
#include "relay/v1/router.grpc.pb.h"

namespace relay::gateway {
namespace {

using relay::v1::ForwardEvent;
using relay::v1::GatewayEvent;
using relay::v1::RouterCommand;

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address) {
  grpc::ChannelArguments args;
  // A dead peer of a long-lived stream is noticed within seconds.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // Reconnect quickly after a restart of the peer.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

// ---------------------------------------------------------------- authsvc --

AuthVerdict::Kind ToKind(relay::v1::Verdict verdict) {
  switch (verdict) {
    case relay::v1::VERDICT_OK:
      return AuthVerdict::Kind::kOk;
    case relay::v1::VERDICT_LOCKED_OUT:
      return AuthVerdict::Kind::kLockedOut;
    default:
      return AuthVerdict::Kind::kInvalid;
  }
}

class GrpcAuthClient final : public AuthClient {
 public:
  explicit GrpcAuthClient(const std::string& address)
      : stub_(relay::v1::Auth::NewStub(MakeChannel(address))) {}

  void VerifyToken(std::string token, std::string address, Callback done) override {
    auto* call = new Call<relay::v1::VerifyTokenRequest, relay::v1::VerifyTokenResponse>(
        std::move(done));
    call->request.set_token(std::move(token));
    call->request.set_address(std::move(address));
    stub_->async()->VerifyToken(&call->context, &call->request, &call->response,
                                [call](grpc::Status status) { call->Done(status); });
  }

  void RedeemTicket(std::string ticket, Callback done) override {
    auto* call = new Call<relay::v1::RedeemTicketRequest, relay::v1::RedeemTicketResponse>(
        std::move(done));
    call->request.set_ticket(std::move(ticket));
    stub_->async()->RedeemTicket(&call->context, &call->request, &call->response,
                                 [call](grpc::Status status) { call->Done(status); });
  }

 private:
  template <typename Request, typename Response>
  struct Call {
    explicit Call(Callback done) : done(std::move(done)) {
      // authsvc bounds its own upstream wait; this only catches a hung authsvc.
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    }
    void Done(const grpc::Status& status) {
      AuthVerdict verdict;
      if (status.ok()) {
        verdict.kind = ToKind(response.verdict());
        verdict.user = response.user();
        verdict.role = response.role();
        if constexpr (std::is_same_v<Response, relay::v1::VerifyTokenResponse>) {
          verdict.retry_after_seconds = response.retry_after_seconds();
        }
      }
      done(std::move(verdict));
      delete this;
    }
    grpc::ClientContext context;
    Request request;
    Response response;
    Callback done;
  };

  std::unique_ptr<relay::v1::Auth::Stub> stub_;
};

// ----------------------------------------------------------------- router --

// One forwarded call; deletes itself in OnDone.
class ForwardCall final : public grpc::ClientReadReactor<ForwardEvent> {
 public:
  // Lets the agent's side cancel the call while it may be ending on a gRPC thread.
  class Control final : public ForwardHandle {
   public:
    void Cancel() override ABSL_LOCKS_EXCLUDED(mu_) {
      absl::MutexLock lock(&mu_);
      if (call_ != nullptr) {
        call_->context_.TryCancel();
      }
    }
    void Attach(ForwardCall* call) ABSL_LOCKS_EXCLUDED(mu_) {
      absl::MutexLock lock(&mu_);
      call_ = call;
    }

   private:
    absl::Mutex mu_;
    ForwardCall* call_ ABSL_GUARDED_BY(mu_) = nullptr;
  };

  // Starts the call. The call may end, and this object be deleted, on another
  // thread as soon as StartCall returns: the caller keeps control, not this.
  ForwardCall(relay::v1::Router::Stub& stub, ForwardRequest request, absl::Duration timeout,
              RouterClient::EventCallback on_event, RouterClient::ForwardCallback done,
              std::shared_ptr<Control> control)
      : control_(std::move(control)), on_event_(std::move(on_event)),
        done_(std::move(done)) {
    request_.set_account(std::move(request.account));
    request_.set_session_id(std::move(request.session_id));
    request_.set_method(std::move(request.method));
    request_.set_params(std::move(request.params));
    request_.set_request_id(std::move(request.request_id));
    request_.set_progress_token(std::move(request.progress_token));
    context_.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
    control_->Attach(this);
    stub.async()->Forward(&context_, &request_, this);
    StartRead(&in_);
    StartCall();
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      return;
    }
    if (in_.event_case() == ForwardEvent::kMessage) {
      on_event_(std::move(*in_.mutable_message()));
      StartRead(&in_);
      return;
    }
    event_ = std::move(in_);
    got_event_ = true;
  }

  void OnDone(const grpc::Status& status) override {
    control_->Attach(nullptr);
    done_(Outcome(status));
    delete this;
  }

 private:
  ForwardOutcome Outcome(const grpc::Status& status) {
    ForwardOutcome outcome;
    if (got_event_) {
      switch (event_.event_case()) {
        case ForwardEvent::kResult:
          outcome.kind = ForwardOutcome::Kind::kResult;
          outcome.payload = std::move(*event_.mutable_result());
          outcome.view_line = std::move(*event_.mutable_view_line());
          return outcome;
        case ForwardEvent::kError:
          outcome.kind = ForwardOutcome::Kind::kError;
          outcome.payload = std::move(*event_.mutable_error());
          return outcome;
        case ForwardEvent::kFailure:
          switch (event_.failure().reason()) {
            case relay::v1::Failure::REASON_NO_TAB:
              outcome.kind = ForwardOutcome::Kind::kNoTab;
              return outcome;
            case relay::v1::Failure::REASON_DISPLACED:
              outcome.kind = ForwardOutcome::Kind::kDisplaced;
              return outcome;
            case relay::v1::Failure::REASON_CANCELLED:
              outcome.kind = ForwardOutcome::Kind::kCancelled;
              return outcome;
            case relay::v1::Failure::REASON_SESSION_ENDED:
              outcome.kind = ForwardOutcome::Kind::kSessionEnded;
              return outcome;
            default:
              outcome.kind = ForwardOutcome::Kind::kTabGone;
              return outcome;
          }
        case ForwardEvent::kMessage:
        case ForwardEvent::EVENT_NOT_SET:
          break;
      }
    }
    switch (status.error_code()) {
      case grpc::StatusCode::DEADLINE_EXCEEDED:
        outcome.kind = ForwardOutcome::Kind::kTimeout;
        break;
      case grpc::StatusCode::CANCELLED:
        outcome.kind = ForwardOutcome::Kind::kCancelled;
        break;
      default:
        outcome.kind = ForwardOutcome::Kind::kRouterUnavailable;
        break;
    }
    return outcome;
  }

  std::shared_ptr<Control> control_;
  RouterClient::EventCallback on_event_;
  RouterClient::ForwardCallback done_;
  grpc::ClientContext context_;
  relay::v1::ForwardRequest request_;
  ForwardEvent in_;
  ForwardEvent event_;
  bool got_event_ = false;
};

class Shard;

// One link to one router shard; deletes itself in OnDone, after which the
// shard starts another.
class LinkReactor final : public grpc::ClientBidiReactor<GatewayEvent, RouterCommand> {
 public:
  LinkReactor(Shard& shard, relay::v1::Router::Stub& stub, TabCommandSink& sink);

  // Any thread. False once the link has ended: the event is dropped, and the
  // tabs are announced again on the next link.
  bool Send(GatewayEvent event) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (closed_) {
      return false;
    }
    queue_.push_back(std::move(event));
    if (!writing_) {
      writing_ = true;
      StartWrite(&queue_.front());
    }
    return true;
  }

  void OnWriteDone(bool ok) override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    queue_.pop_front();
    if (!ok || queue_.empty()) {
      writing_ = false;
      return;
    }
    StartWrite(&queue_.front());
  }

  void OnReadInitialMetadataDone(bool ok) override;
  void OnReadDone(bool ok) override;
  void OnDone(const grpc::Status& status) override;

  void Cancel() { context_.TryCancel(); }

 private:
  Shard& shard_;
  TabCommandSink& sink_;
  grpc::ClientContext context_;
  RouterCommand in_;
  absl::Mutex mu_;
  std::deque<GatewayEvent> queue_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

// One router shard: its channel and its current link.
class Shard {
 public:
  Shard(size_t index, const std::string& address, std::string gateway_id, TabCommandSink& sink)
      : index_(index), address_(address), gateway_id_(std::move(gateway_id)), sink_(sink),
        stub_(relay::v1::Router::NewStub(MakeChannel(address))) {}

  relay::v1::Router::Stub& stub() { return *stub_; }
  size_t index() const { return index_; }

  void Link() ABSL_LOCKS_EXCLUDED(mu_) {
    auto* link = new LinkReactor(*this, *stub_, sink_);
    {
      absl::MutexLock lock(&mu_);
      link_ = link;
    }
    GatewayEvent hello;
    hello.mutable_hello()->set_gateway_id(gateway_id_);
    // Through Send, under mu_: the new link may already have failed and gone.
    Send(std::move(hello));
    // Announces this gateway's tabs of this shard; they queue behind the hello.
    sink_.OnLinkUp(index_);
  }

  bool Send(GatewayEvent event) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return link_ != nullptr && link_->Send(std::move(event));
  }

  // Called by the link in OnDone, before it deletes itself.
  void OnLinkEnded(LinkReactor* link, const grpc::Status& status) ABSL_LOCKS_EXCLUDED(mu_) {
    {
      absl::MutexLock lock(&mu_);
      if (link_ == link) {
        link_ = nullptr;
        up_.store(false);
      }
      if (stopping_) {
        return;
      }
      backoff_ = backoff_ == absl::ZeroDuration() ? absl::Milliseconds(100)
                                                  : std::min(backoff_ * 2, absl::Seconds(1));
      if (status.ok() || status.error_code() != grpc::StatusCode::UNAVAILABLE) {
        backoff_ = absl::Milliseconds(100);
      }
    }
    common::LogWarn("router link ended",
                    {{"router", address_}, {"error", status.error_message()}});
    sink_.OnLinkDown(index_);
    ScheduleRelink();
  }

  // The router answered the link's start: it is up.
  void LinkEstablished() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    backoff_ = absl::ZeroDuration();
    up_.store(true);
  }

  bool up() const { return up_.load(); }

  void Stop() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    if (link_ != nullptr) {
      link_->Cancel();
    }
  }

 private:
  void ScheduleRelink() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::Duration wait;
    {
      absl::MutexLock lock(&mu_);
      std::uniform_real_distribution<double> jitter(0.5, 1.5);
      wait = backoff_ * jitter(rng_);
      alarm_ = std::make_unique<grpc::Alarm>();
      alarm_->Set(absl::ToChronoTime(absl::Now() + wait), [this](bool ok) {
        if (ok) {
          Link();
        }
      });
    }
  }

  const size_t index_;
  const std::string address_;
  const std::string gateway_id_;
  TabCommandSink& sink_;
  std::unique_ptr<relay::v1::Router::Stub> stub_;
  absl::Mutex mu_;
  LinkReactor* link_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::atomic<bool> up_{false};
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::Duration backoff_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
  std::unique_ptr<grpc::Alarm> alarm_ ABSL_GUARDED_BY(mu_);
  std::mt19937 rng_ ABSL_GUARDED_BY(mu_){std::random_device{}()};
};

LinkReactor::LinkReactor(Shard& shard, relay::v1::Router::Stub& stub, TabCommandSink& sink)
    : shard_(shard), sink_(sink) {
  // The link waits for the router instead of failing while it is down, so
  // that it is up again as soon as the channel reconnects (within the
  // channel's 1 s reconnect backoff of a router's restart). Forward calls do
  // not wait: an agent must hear at once that its shard is down.
  context_.set_wait_for_ready(true);
  stub.async()->Link(&context_, this);
  StartRead(&in_);
  // Writes start outside reactions (any thread may Send): hold the stream
  // open until the read side has ended.
  AddHold();
  StartCall();
}

void LinkReactor::OnReadInitialMetadataDone(bool ok) {
  if (ok) {
    shard_.LinkEstablished();
  }
}

void LinkReactor::OnReadDone(bool ok) {
  if (!ok) {
    {
      absl::MutexLock lock(&mu_);
      closed_ = true;
    }
    RemoveHold();
    return;
  }
  switch (in_.command_case()) {
    case RouterCommand::kTabAccepted:
      sink_.OnAccepted(in_.tab_accepted().tab_id(), in_.tab_accepted().agents());
      break;
    case RouterCommand::kDeliver: {
      auto* deliver = in_.mutable_deliver();
      sink_.OnDeliver(deliver->tab_id(), deliver->call_id(), std::move(*deliver->mutable_method()),
                      std::move(*deliver->mutable_params()));
      break;
    }
    case RouterCommand::kCancel:
      sink_.OnCancel(in_.cancel().tab_id(), in_.cancel().call_id(),
                     std::move(*in_.mutable_cancel()->mutable_reason()));
      break;
    case RouterCommand::kDisplace:
      sink_.OnDisplace(in_.displace().tab_id(),
                       std::move(*in_.mutable_displace()->mutable_reason()));
      break;
    case RouterCommand::kAgents:
      sink_.OnAgents(in_.agents().tab_id(), in_.agents().count());
      break;
    case RouterCommand::kStreamEvent: {
      auto* event = in_.mutable_stream_event();
      sink_.OnStreamEvent(event->stream_id(), event->event_id(),
                          std::move(*event->mutable_message()));
      break;
    }
    case RouterCommand::kSessionEnded:
      sink_.OnSessionEnded(std::move(*in_.mutable_session_ended()->mutable_session_id()));
      break;
    case RouterCommand::kTabResponse: {
      auto* response = in_.mutable_tab_response();
      sink_.OnTabResponse(response->tab_id(), std::move(*response->mutable_tab_request_id()),
                          response->is_error(), std::move(*response->mutable_payload()));
      break;
    }
    case RouterCommand::COMMAND_NOT_SET:
      break;
  }
  StartRead(&in_);
}

void LinkReactor::OnDone(const grpc::Status& status) {
  shard_.OnLinkEnded(this, status);
  delete this;
}

class GrpcRouterClient final : public RouterClient {
 public:
  GrpcRouterClient(const std::vector<std::string>& addresses, std::string gateway_id,
                   TabCommandSink& sink)
      : picker_(addresses) {
    for (size_t i = 0; i < addresses.size(); ++i) {
      shards_.push_back(std::make_unique<Shard>(i, addresses[i], gateway_id, sink));
    }
    for (auto& shard : shards_) {
      shard->Link();
    }
  }

  ~GrpcRouterClient() override {
    for (auto& shard : shards_) {
      shard->Stop();
    }
  }

  std::shared_ptr<ForwardHandle> Forward(ForwardRequest request, absl::Duration timeout,
                                         EventCallback on_event, ForwardCallback done) override {
    Shard& shard = *shards_[picker_.Pick(request.account)];
    auto control = std::make_shared<ForwardCall::Control>();
    new ForwardCall(shard.stub(), std::move(request), timeout, std::move(on_event), std::move(done),
                    control);
    return control;
  }

  void SessionTouch(const std::string& account, const std::string& session) override {
    GatewayEvent event;
    auto* touch = event.mutable_session_touch();
    touch->set_session_id(session);
    touch->set_account(account);
    Send(account, std::move(event));
  }

  void SessionEnd(const std::string& account, const std::string& session) override {
    GatewayEvent event;
    auto* end = event.mutable_session_end();
    end->set_session_id(session);
    end->set_account(account);
    Send(account, std::move(event));
  }

  void StreamOpen(const std::string& account, const std::string& session, uint64_t stream_id,
                  uint64_t last_event_id) override {
    GatewayEvent event;
    auto* open = event.mutable_stream_open();
    open->set_stream_id(stream_id);
    open->set_session_id(session);
    open->set_account(account);
    open->set_last_event_id(last_event_id);
    Send(account, std::move(event));
  }

  void StreamClose(const std::string& account, const std::string& session,
                   uint64_t stream_id) override {
    GatewayEvent event;
    auto* close = event.mutable_stream_close();
    close->set_stream_id(stream_id);
    close->set_session_id(session);
    Send(account, std::move(event));
  }

  void Subscribe(const std::string& account, const std::string& session, const std::string& uri,
                 bool on) override {
    GatewayEvent event;
    auto* sub = event.mutable_session_subscribe();
    sub->set_session_id(session);
    sub->set_account(account);
    sub->set_uri(uri);
    sub->set_subscribe(on);
    Send(account, std::move(event));
  }

  void SetLogLevel(const std::string& account, const std::string& session,
                   const std::string& level) override {
    GatewayEvent event;
    auto* set = event.mutable_session_log_level();
    set->set_session_id(session);
    set->set_account(account);
    set->set_level(level);
    Send(account, std::move(event));
  }

  void AgentReply(const std::string& account, const std::string& session, uint64_t call_id,
                  const std::string& tab_request_id, bool is_error,
                  std::string payload) override {
    GatewayEvent event;
    auto* reply = event.mutable_agent_reply();
    reply->set_account(account);
    reply->set_session_id(session);
    reply->set_call_id(call_id);
    reply->set_tab_request_id(tab_request_id);
    reply->set_is_error(is_error);
    reply->set_payload(std::move(payload));
    Send(account, std::move(event));
  }

  void AgentCancel(const std::string& account, const std::string& session,
                   const std::string& request_id, const std::string& reason) override {
    GatewayEvent event;
    auto* cancel = event.mutable_agent_cancel();
    cancel->set_account(account);
    cancel->set_session_id(session);
    cancel->set_request_id(request_id);
    cancel->set_reason(reason);
    Send(account, std::move(event));
  }

  void TabNotify(const std::string& account, TabNote note) override {
    GatewayEvent event;
    auto* out = event.mutable_tab_notification();
    out->set_tab_id(note.tab_id);
    out->set_method(std::move(note.method));
    out->set_params(std::move(note.params));
    out->set_level(std::move(note.level));
    out->set_uri(std::move(note.uri));
    out->set_line(std::move(note.line));
    out->set_call_id(note.call_id);
    out->set_progress_token(std::move(note.progress_token));
    Send(account, std::move(event));
  }

  void TabRequest(const std::string& account, uint64_t tab_id, uint64_t call_id,
                  std::string message, const std::string& tab_request_id) override {
    GatewayEvent event;
    auto* request = event.mutable_tab_request();
    request->set_tab_id(tab_id);
    request->set_call_id(call_id);
    request->set_message(std::move(message));
    request->set_tab_request_id(tab_request_id);
    Send(account, std::move(event));
  }

  void TabUp(const TabAnnouncement& tab) override {
    GatewayEvent event;
    auto* up = event.mutable_tab_up();
    up->set_tab_id(tab.tab_id);
    up->set_account(tab.account);
    up->set_role(tab.role);
    up->set_client_name(tab.client_name);
    up->set_client_version(tab.client_version);
    Send(tab.account, std::move(event));
  }

  void TabDown(const std::string& account, uint64_t tab_id) override {
    GatewayEvent event;
    event.mutable_tab_down()->set_tab_id(tab_id);
    Send(account, std::move(event));
  }

  void TabReply(const std::string& account, uint64_t call_id, bool is_error,
                std::string payload) override {
    GatewayEvent event;
    auto* reply = event.mutable_tab_reply();
    reply->set_call_id(call_id);
    reply->set_is_error(is_error);
    reply->set_payload(std::move(payload));
    Send(account, std::move(event));
  }

  size_t ShardOf(const std::string& account) const override { return picker_.Pick(account); }

  void Send(const std::string& account, GatewayEvent event) {
    shards_[picker_.Pick(account)]->Send(std::move(event));
  }

  size_t ShardsUp() const override {
    size_t up = 0;
    for (const auto& shard : shards_) {
      up += shard->up() ? 1 : 0;
    }
    return up;
  }

 private:
  ShardPicker picker_;
  std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace

std::unique_ptr<AuthClient> NewGrpcAuthClient(const std::string& address) {
  return std::make_unique<GrpcAuthClient>(address);
}

std::unique_ptr<RouterClient> NewGrpcRouterClient(const std::vector<std::string>& shards,
                                                  std::string gateway_id, TabCommandSink& sink) {
  return std::make_unique<GrpcRouterClient>(shards, std::move(gateway_id), sink);
}

}  // namespace relay::gateway
