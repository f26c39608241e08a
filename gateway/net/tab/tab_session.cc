#include "gateway/net/tab/tab_session.h"

#include <boost/asio/post.hpp>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/clock.h"
#include "common/link/frame_arena.h"
#include "common/log.h"
#include "gateway/core/keepalive_phase.h"
#include "gateway/core/tab_protocol.h"
#include "gateway/core/ws_frame.h"
#include "gateway/net/gathered_posts.h"
#include "gateway/net/registry.h"

namespace relay::gateway {

namespace asio = boost::asio;

namespace {

// The largest message before the hello is answered.
constexpr size_t kMaxHelloBytes = 16 * 1024;
// Unwritten messages one tab may hold: room for a few large requests.
constexpr size_t kMaxQueuedBytes = 64 * 1024 * 1024;
// How long the tab has to answer our close frame (it may first have to read what was queued
// before it).
constexpr std::chrono::seconds kCloseTimeout(10);

}  // namespace

TabSession::TabSession(asio::ip::tcp::socket&& socket, const TabServices& services,
                       ConnectionSlot slot)
    : socket_(std::move(socket)), services_(services), slot_(std::move(slot)),
      // Until its hello is answered a connection is a stranger's: it may send
      // a hello (a few hundred bytes), not 16 MiB for us to hold.
      in_(socket_, *this, kMaxHelloBytes), out_(socket_, *this, kMaxQueuedBytes),
      timer_(socket_.get_executor()) {}

void TabSession::Run(absl::string_view ws_key) {
  out_.SendRaw(WsUpgradeAnswer(ws_key));
  ArmHelloTimer();
  in_.Start();
}

void TabSession::ArmTimer(std::chrono::steady_clock::duration after,
                          void (TabSession::*then)()) {
  uint32_t armed = ++timer_armed_;
  timer_.expires_after(after);
  timer_.async_wait([self = shared_from_this(), armed, then](boost::system::error_code ec) {
    if (!ec && armed == self->timer_armed_) {
      ((*self).*then)();
    }
  });
}

void TabSession::ArmHelloTimer() {
  ArmTimer(absl::ToChronoMilliseconds(services_.options.hello_timeout),
           &TabSession::OnHelloTimeout);
}

void TabSession::OnHelloTimeout() {
  if (phase_ == State::kLive || phase_ == State::kClosing) {
    return;
  }
  if (phase_ == State::kRedeeming) {
    // The hello came in time; its ticket is with the account service, whose answer is bounded
    // (the auth client's queue and call deadlines) and always comes. Closing now would leave
    // that redemption running: the ticket would be spent with no tab to take it, and the tab's
    // reconnect with it refused as invalid (a reconnect storm's waits in the auth queue did
    // exactly that to thousands of tabs).
    return ArmHelloTimer();
  }
  if (phase_ == State::kAnnouncing) {
    // The ticket was good but the router did not take the tab in time.
    CloseWith(kCloseTryLater, "relay not ready, reconnect");
    return;
  }
  CloseWith(kCloseHelloTimeout, "no relay/hello within 10 s");
}

void TabSession::OnKeepAlive() {
  if (phase_ != State::kLive) {
    return;
  }
  if (in_.TakeHeard()) {
    pinged_ = false;
  } else if (pinged_) {
    // Two intervals without a byte (TAB-PROTOCOL.md "Keepalive"): gone without a word.
    common::LogInfo("tab missed its pings; dropping it", {{"tab", tab_id_}});
    return End();
  } else {
    pinged_ = true;
    out_.SendRaw(PingFrame());
  }
  // The credential the tab holds stays good for at least half its lifetime.
  if (absl::Now() - resume_signed_ >= TabResumeSigner::kLifetime / 2) {
    SendResume();
  }
  ArmTimer(absl::ToChronoMilliseconds(services_.options.tab_idle_timeout / 2),
           &TabSession::OnKeepAlive);
}

void TabSession::OnCloseTimeout() {
  // No close frame back, ours never written, or no end of stream after the
  // handshake: the connection just ends.
  End();
}

void TabSession::End() {
  Cleanup();
  out_.Abort();
  // The socket is closed: nothing is left for the timer to bound, and it must
  // not hold this session (and a partial message) until it fires.
  timer_.cancel();
}

void TabSession::OnWsText(std::string text) {
  HandleMessage(text);
}

void TabSession::OnWsPing(absl::string_view payload) {
  if (out_.closing()) {
    return;
  }
  out_.SendRaw(PongFrame(payload));
  // Nothing more is read until the pongs of what was read are written (OnTabWritten): a tab
  // that pings without reading cannot pile pongs up. One read can bring hundreds of pings:
  // the reading waits for the last pong, not the first, and for nothing queued after it.
  last_pong_ = out_.appended();
  in_.Hold();
}

void TabSession::OnTabWritten(uint64_t written) {
  // Before the close frame's waiter (a Teardown) runs: the reader then reads on to the tab's
  // end of stream.
  if (in_.held() && written >= last_pong_) {
    in_.Resume();
  }
}

void TabSession::OnWsClose(uint16_t code, absl::string_view) {
  peer_closed_ = true;
  Cleanup();
  if (!out_.closing()) {
    // The tab closes: its code goes back to it (§5.5.1), after what was queued.
    return CloseWith(code, "");
  }
  if (close_sent_) {
    out_.Teardown();
  }
}

void TabSession::OnWsFailure(WsFailure failure, absl::string_view why) {
  if (close_sent_) {
    // Bad input after our close frame went out: the handshake ends here.
    Cleanup();
    return out_.Teardown();
  }
  switch (failure) {
    case WsFailure::kTooBig:
      return CloseWith(kCloseTooBig, "message too big");
    case WsFailure::kBinary:
      return CloseWith(kCloseBadFirstMessage, "binary messages are not supported");
    case WsFailure::kProtocol:
      return CloseWith(kCloseProtocolError, why);
    case WsFailure::kBadUtf8:
      return CloseWith(kCloseNotUtf8, why);
  }
}

void TabSession::OnTabReadEnded(boost::system::error_code ec) {
  read_ended_ = true;
  if (ec == boost::asio::error::eof && out_.closing() && !close_sent_) {
    // The tab has said all it will; our close frame still goes out, and
    // OnTabCloseSent ends the connection (or the closing deadline does).
    return;
  }
  // The end of stream after the handshake; or gone without it (a reset, a half-close, or
  // closed by us): a write it will never take must not hold this session and its queue.
  End();
}

void TabSession::OnTabCloseSent() {
  close_sent_ = true;
  // The handshake is over once both close frames passed; a reader that stopped on bad input
  // will not see the tab's.
  if (peer_closed_ || in_.done() || read_ended_) {
    Cleanup();
    if (read_ended_) {
      return End();
    }
    out_.Teardown();
  }
}

void TabSession::HandleMessage(absl::string_view text) {
  switch (phase_) {
    case State::kAwaitingHello:
      HandleHello(text);
      break;
    case State::kLive:
      HandleLive(text);
      break;
    case State::kRedeeming:
    case State::kAnnouncing:
      // TAB-PROTOCOL.md: any other message before the hello is answered
      // closes with 4400.
      CloseWith(kCloseBadFirstMessage, "nothing may be sent before the hello is answered");
      break;
    case State::kClosing:
      break;
  }
}

void TabSession::HandleHello(absl::string_view text) {
  std::optional<TabHello> hello = ParseTabHello(text, services_.options.max_json_depth);
  if (!hello) {
    CloseWith(kCloseBadFirstMessage,
              "the first message must be relay/hello with a ticket or a resume credential");
    return;
  }
  hello_id_ = DumpJson(hello->id);
  announcement_.client_name = std::move(hello->client_name);
  announcement_.client_version = std::move(hello->client_version);
  if (!hello->resume.empty()) {
    return Resume(hello->resume);
  }
  phase_ = State::kRedeeming;
  // Its chain's sign-in counts from the ask, not the answer: a user-wide revocation pushed while
  // the redemption was on its way (the answer may be the host API's word from before it) then
  // refuses this tab in Admit(), as it would have closed it open.
  signed_in_ = absl::Now();
  services_.auth.RedeemTicket(
      std::move(hello->ticket), [self = shared_from_this()](AuthVerdict verdict) {
        GatheredPosts::Post(self->socket_.get_executor(),
                            [self, verdict = std::move(verdict)]() mutable {
                              self->OnRedeemed(std::move(verdict));
                            });
      });
}

void TabSession::OnRedeemed(AuthVerdict verdict) {
  if (phase_ != State::kRedeeming) {
    return;
  }
  switch (verdict.kind) {
    case AuthVerdict::Kind::kOk:
      break;
    case AuthVerdict::Kind::kInvalid:
    case AuthVerdict::Kind::kLockedOut:
      return RefuseHello(-32001, "invalid ticket", kCloseBadTicket, "invalid ticket");
    case AuthVerdict::Kind::kUnavailable:
      return RefuseHello(kInternalError,
                         "the account service could not be reached or is busy; reconnect shortly",
                         kCloseTryLater, "account service unavailable");
  }
  announcement_.account = std::move(verdict.user);
  announcement_.role = std::move(verdict.role);
  announcement_.generation = verdict.generation;
  // The router has a hello timeout of its own to take the tab, however long the redemption
  // took (OnHelloTimeout: 1013 when it does not).
  ArmHelloTimer();
  Admit();
}

void TabSession::RefuseHello(int rpc_code, absl::string_view message, uint16_t close_code,
                             absl::string_view reason) {
  Send(EncodeError(nlohmann::json::parse(hello_id_, nullptr, false), rpc_code, message));
  CloseWith(close_code, reason);
}

void TabSession::Resume(absl::string_view credential) {
  // Checked here, on this thread: an HMAC, no host API, so that the tabs of a gateway
  // that went away come back as fast as the gateways can take them.
  absl::StatusOr<TabResume> resume = services_.resumes.Verify(credential, absl::Now());
  if (!resume.ok()) {
    services_.metrics.tab_resumes_refused.Add();
    return RefuseHello(-32001,
                       "invalid or expired resume credential; connect again with a new ticket",
                       kCloseBadTicket, "invalid or expired resume credential");
  }
  announcement_.account = std::move(resume->account);
  announcement_.role = std::move(resume->role);
  // Its place in the account's order is its first ticket's: a newer tab of the account
  // keeps it, and this connection beats its own stale one (admitted later).
  announcement_.generation = resume->generation;
  announcement_.resumed_at = static_cast<uint64_t>(absl::ToUnixMicros(absl::Now()));
  signed_in_ = resume->signed_in;
  Admit();
}

void TabSession::SendResume() {
  resume_signed_ = absl::Now();
  TabResume resume;
  resume.account = announcement_.account;
  resume.role = announcement_.role;
  resume.generation = announcement_.generation;
  resume.signed_in = signed_in_;
  resume.expires = resume_signed_ + TabResumeSigner::kLifetime;
  Send(EncodeNotification(
      "relay/resume",
      {{"resume", services_.resumes.Sign(resume)},
       {"expiresIn", absl::ToInt64Seconds(TabResumeSigner::kLifetime)}}));
}

void TabSession::Admit() {
  // Before it is registered: every tab a fan-out finds knows its shard.
  shard_.store(services_.router.ShardOf(announcement_.account), std::memory_order_relaxed);
  phase_ = State::kAnnouncing;
  tab_id_ = services_.tabs.Add(weak_from_this(), shard());
  // Registered first, then asked: either the drain's list of tabs has this
  // one, or the drain began before and is seen here.
  if (services_.draining.load()) {
    return RefuseHello(kInternalError, "the relay is shutting down; reconnect", kCloseGoingAway,
                       "relay shutting down");
  }
  // The same for a sign-in that ended (authsvc's user-wide revocation): recorded before the
  // registry is walked, so a revocation that comes now either finds this tab there or is
  // seen here. A resumed chain that began before it is refused as a live tab is told.
  if (services_.signed_out.EndedSince(announcement_.account, signed_in_)) {
    if (announcement_.resumed_at != 0) {
      services_.metrics.tab_resumes_refused.Add();
    }
    return RefuseHello(-32001, "the account's sign-in has ended; sign in again", kCloseSignedOut,
                       "signed out");
  }
  if (announcement_.resumed_at != 0) {
    services_.metrics.tabs_resumed.Add();
  }
  announced_ = true;
  Announce();
}

void TabSession::Announce() {
  // Re-announced once accepted: the router needs no acceptance to send back.
  announcement_.live = phase_ == State::kLive;
  services_.router.Send(announcement_.account, TabUpEvent(tab_id_, announcement_));
}

void TabSession::Reply(uint64_t call_id, bool is_error, std::string payload) {
  // On an arena in this frame: the answer's message and the head of its
  // payload cost no allocation (the link serialises it at once).
  common::FrameArena<512> arena;
  relay::v1::GatewayEvent& event = arena.Make<relay::v1::GatewayEvent>();
  TabReplyInto(event, tab_id_, call_id, is_error, std::move(payload));
  services_.router.Send(announcement_.account, event);
}

void TabSession::PostAccepted(uint32_t agents) {
  GatheredPosts::Post(socket_.get_executor(), [self = shared_from_this(), agents] {
    if (self->phase_ != State::kAnnouncing) {
      return;  // a re-announcement after a router restart
    }
    self->phase_ = State::kLive;
    // The first tick a spread part of a period away: tabs that come back
    // together are not pinged together for ever after (KeepAlivePhase).
    self->ArmTimer(KeepAlivePhase::First(
                       absl::ToChronoMilliseconds(self->services_.options.tab_idle_timeout / 2)),
                   &TabSession::OnKeepAlive);
    // Counted first: a send below may find the tab not reading and clean up,
    // which must count it gone.
    self->services_.metrics.tabs_connected.Add();
    self->counted_ = true;
    self->Send(EncodeHelloAnswer(nlohmann::json::parse(self->hello_id_, nullptr, false),
                                 self->announcement_.account, self->announcement_.role,
                                 absl::StrCat("t-", self->services_.gateway_id, "-", self->tab_id_),
                                 agents));
    self->Send(EncodeNotification("relay/agents", {{"count", agents}}));
    self->SendResume();
    self->in_.SetLimit(self->services_.options.max_tab_message_bytes);
    // Calls that overtook the acceptance go out now, after the hello's answer.
    for (const TabCalls::Call& call : self->calls_.Release()) {
      self->Send(EncodeRequest(call.id, call.method, call.params));
    }
    common::LogInfo("tab connected", {{"tab", self->tab_id_},
                                      {"client", self->announcement_.client_name}});
  });
}

void TabSession::HandleLive(absl::string_view text) {
  auto decoded = DecodeMessage(text, services_.options.max_json_depth);
  if (auto* failure = std::get_if<RpcFailure>(&decoded)) {
    if (failure->too_deep) {
      return RefuseTooDeep(text);
    }
    // An answer to a call in flight that is not a valid response (both result
    // and error, no jsonrpc, an error that is not an object): the call ends
    // with an error its agent can read, not at its deadline.
    if (EndCallUnreadable(failure->id, absl::StrCat("not a valid JSON-RPC response (",
                                                    failure->message, ")"))) {
      return;
    }
    if (!failure->id.is_null()) {
      Send(EncodeError(failure->id, failure->code, failure->message));
    }
    return;
  }
  RpcMessage& message = std::get<RpcMessage>(decoded);
  switch (message.kind) {
    case RpcMessage::Kind::kResponse: {
      if (!message.id.is_number_unsigned()) {
        return;  // not an id the relay chose
      }
      uint64_t call_id = message.id.get<uint64_t>();
      if (!calls_.Finish(call_id)) {
        return;  // cancelled meanwhile: the answer is dropped
      }
      Reply(call_id, message.is_error, std::move(message.payload));
      MaybeEndDrain();
      return;
    }
    case RpcMessage::Kind::kRequest:
      if (IsRequestToAgent(message.method)) {
        HandleRequestToAgent(message);
      } else if (message.method == "ping") {
        Send(EncodeResult(message.id, "{}"));
      } else {
        Send(EncodeError(message.id, kMethodNotFound,
                         absl::StrCat("Method not found: ", message.method)));
      }
      return;
    case RpcMessage::Kind::kNotification:
      HandleNotification(message);
      return;
  }
}

void TabSession::RefuseTooDeep(absl::string_view text) {
  // The message is refused, the tab stays: an answer to a call in flight
  // ends that call with an error its agent can read; a request is answered
  // with the parse error; anything else is dropped.
  RpcFailure failure = TooDeep(text, services_.options.max_json_depth);
  common::LogWarn("tab message nested too deep; refused", {{"tab", tab_id_}});
  if (EndCallUnreadable(failure.id, absl::StrCat("nested deeper than ",
                                                 services_.options.max_json_depth, " levels"))) {
    return;
  }
  if (!failure.id.is_null()) {
    Send(EncodeError(failure.id, failure.code, failure.message));
  }
}

bool TabSession::EndCallUnreadable(const nlohmann::json& id, absl::string_view what) {
  if (!id.is_number_unsigned()) {
    return false;
  }
  uint64_t call_id = id.get<uint64_t>();
  std::optional<bool> is_tool_call = calls_.Finish(call_id);
  if (!is_tool_call) {
    return false;
  }
  TabAnswer answer = UnreadableAnswer(*is_tool_call, what);
  Reply(call_id, answer.is_error, std::move(answer.payload));
  MaybeEndDrain();
  return true;
}

void TabSession::HandleNotification(RpcMessage& message) {
  std::optional<TabNotice> notice = ParseTabNotice(message);
  if (!notice) {
    return;  // not for agents (e.g. the tab's own notifications/initialized)
  }
  if (!notifications_.Allow(common::MonotonicNow())) {
    if (dropped_notifications_++ % 1000 == 0) {
      common::LogWarn("tab over its notification rate; dropping",
                      {{"tab", tab_id_}, {"dropped", dropped_notifications_}});
    }
    return;
  }
  services_.router.Send(announcement_.account, TabNotificationEvent(tab_id_, *std::move(notice)));
}

void TabSession::HandleRequestToAgent(RpcMessage& message) {
  auto request = ToAgentRequest(message);
  if (auto* error = std::get_if<std::string>(&request)) {
    Send(EncodeError(message.id, kInvalidParams, *error));
    return;
  }
  services_.router.Send(announcement_.account,
                      TabRequestEvent(tab_id_, std::get<AgentRequest>(std::move(request))));
}

void TabSession::CancelAll(absl::string_view reason) {
  std::vector<uint64_t> given_up = calls_.FinishAll();
  if (phase_ != State::kLive) {
    return;  // calls held before the hello's answer were never sent
  }
  for (uint64_t call_id : given_up) {
    Send(EncodeNotification("notifications/cancelled",
                            {{"requestId", call_id}, {"reason", reason}}));
  }
}

void TabSession::Send(std::string text) {
  out_.Send(std::move(text));
}

void TabSession::CloseWith(uint16_t code, absl::string_view reason) {
  if (out_.closing()) {
    return;
  }
  phase_ = State::kClosing;
  ArmTimer(kCloseTimeout, &TabSession::OnCloseTimeout);
  out_.CloseWith(code, reason);
}

void TabSession::OnTabWriterDone() {
  Cleanup();
  timer_.cancel();
}


void TabSession::PostDrain() {
  GatheredPosts::Post(socket_.get_executor(), [self = shared_from_this()] {
    self->draining_ = true;
    self->MaybeEndDrain();
  });
}

void TabSession::MaybeEndDrain() {
  NoteCalls();  // called after every change that may end calls
  if (draining_ && calls_.empty() && phase_ != State::kClosing) {
    CloseWith(kCloseGoingAway, "relay shutting down");
  }
}

void TabSession::Cleanup() {
  if (cleaned_up_) {
    return;
  }
  cleaned_up_ = true;
  phase_ = State::kClosing;
  if (tab_id_ != 0) {
    services_.tabs.Remove(tab_id_);
  }
  if (counted_) {
    services_.metrics.tabs_disconnected.Add();
  }
  if (announced_) {
    announced_ = false;
    services_.router.Send(announcement_.account, TabDownEvent(tab_id_));
    common::LogInfo("tab disconnected", {{"tab", tab_id_}});
  }
}

}  // namespace relay::gateway
