#include "gateway/net/tab/tab_session.h"

#include <boost/asio/post.hpp>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/clock.h"
#include "common/log.h"
#include "gateway/core/tab_protocol.h"
#include "gateway/net/gathered_posts.h"
#include "gateway/net/registry.h"

namespace relay::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;

namespace {

// The largest message before the hello is answered.
constexpr size_t kMaxHelloBytes = 16 * 1024;
// Unwritten messages one tab may hold: room for a few large requests.
constexpr size_t kMaxQueuedBytes = 64 * 1024 * 1024;

}  // namespace

TabSession::TabSession(beast::tcp_stream&& stream, const TabServices& services, ConnectionSlot slot)
    : ws_(std::move(stream)), services_(services), slot_(std::move(slot)), in_(ws_, *this),
      out_(ws_, *this, kMaxQueuedBytes), hello_timer_(ws_.get_executor()) {}

void TabSession::Run(http::request<http::string_body> upgrade) {
  // Timeouts move from the TCP stream to the WebSocket's own (with pings).
  beast::get_lowest_layer(ws_).expires_never();
  websocket::stream_base::timeout timeout;
  timeout.handshake_timeout = std::chrono::seconds(10);
  timeout.idle_timeout = absl::ToChronoMilliseconds(services_.options.tab_idle_timeout);
  timeout.keep_alive_pings = true;
  ws_.set_option(timeout);
  ws_.set_option(websocket::stream_base::decorator([](websocket::response_type& res) {
    res.set(http::field::server, "mcp-tab-relay");
  }));
  ws_.async_accept(upgrade, beast::bind_front_handler(&TabSession::OnAccept, shared_from_this()));
}

void TabSession::OnAccept(beast::error_code ec) {
  if (ec) {
    return;
  }
  hello_timer_.expires_after(absl::ToChronoMilliseconds(services_.options.hello_timeout));
  hello_timer_.async_wait(
      beast::bind_front_handler(&TabSession::OnHelloTimeout, shared_from_this()));
  // Until its hello is answered a connection is a stranger's: it may send a
  // hello (a few hundred bytes), not 16 MiB for us to hold.
  in_.Start(kMaxHelloBytes);
}

void TabSession::OnHelloTimeout(beast::error_code ec) {
  if (ec || phase_ == State::kLive || phase_ == State::kClosing) {
    return;
  }
  if (phase_ == State::kAnnouncing) {
    // The ticket was good but the router did not take the tab in time.
    CloseWith(kCloseTryLater, "relay not ready, reconnect");
    return;
  }
  CloseWith(kCloseHelloTimeout, "no relay/hello within 10 s");
}

void TabSession::OnTabMessage(std::string text) {
  HandleMessage(text);
}

void TabSession::OnTabMessageTooBig() {
  CloseWith(kCloseTooBig, "message too big");
}

void TabSession::OnTabMessageBinary() {
  CloseWith(kCloseBadFirstMessage, "binary messages are not supported");
}

void TabSession::OnTabReadEnded(beast::error_code ec) {
  Cleanup();
  if (ec != websocket::error::closed) {
    // Gone without the closing handshake (a reset, or a half-close): a write
    // it will never take must not hold this session and its queue.
    out_.Abort();
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
    CloseWith(kCloseBadFirstMessage, "the first message must be relay/hello with a ticket");
    return;
  }
  hello_id_ = DumpJson(hello->id);
  announcement_.client_name = std::move(hello->client_name);
  announcement_.client_version = std::move(hello->client_version);
  phase_ = State::kRedeeming;
  services_.auth.RedeemTicket(
      std::move(hello->ticket), [self = shared_from_this()](AuthVerdict verdict) {
        GatheredPosts::Post(self->ws_.get_executor(),
                            [self, verdict = std::move(verdict)]() mutable {
                              self->OnRedeemed(std::move(verdict));
                            });
      });
}

void TabSession::OnRedeemed(AuthVerdict verdict) {
  if (phase_ != State::kRedeeming) {
    return;
  }
  nlohmann::json id = nlohmann::json::parse(hello_id_, nullptr, false);
  switch (verdict.kind) {
    case AuthVerdict::Kind::kOk:
      break;
    case AuthVerdict::Kind::kInvalid:
    case AuthVerdict::Kind::kLockedOut:
      Send(EncodeError(id, -32001, "invalid ticket"));
      CloseWith(kCloseBadTicket, "invalid ticket");
      return;
    case AuthVerdict::Kind::kUnavailable:
      Send(EncodeError(id, kInternalError,
                       "the account service could not be reached; reconnect with a new ticket"));
      CloseWith(kCloseTryLater, "account service unavailable");
      return;
  }
  phase_ = State::kAnnouncing;
  announcement_.account = std::move(verdict.user);
  announcement_.role = std::move(verdict.role);
  announcement_.generation = verdict.generation;
  tab_id_ = services_.tabs.Add(weak_from_this());
  // Registered first, then asked: either the drain's list of tabs has this
  // one, or the drain began before and is seen here.
  if (services_.draining.load()) {
    Send(EncodeError(id, kInternalError, "the relay is shutting down; reconnect"));
    CloseWith(static_cast<uint16_t>(websocket::close_code::going_away), "relay shutting down");
    return;
  }
  announced_ = true;
  Announce();
}

void TabSession::Announce() {
  services_.router.Send(announcement_.account, TabUpEvent(tab_id_, announcement_));
}

void TabSession::Reply(uint64_t call_id, bool is_error, std::string payload) {
  services_.router.Send(announcement_.account,
                      TabReplyEvent(tab_id_, call_id, is_error, std::move(payload)));
}

void TabSession::PostAccepted(uint32_t agents) {
  GatheredPosts::Post(ws_.get_executor(), [self = shared_from_this(), agents] {
    if (self->phase_ != State::kAnnouncing) {
      return;  // a re-announcement after a router restart
    }
    self->phase_ = State::kLive;
    self->hello_timer_.cancel();
    // Counted first: a send below may find the tab not reading and clean up,
    // which must count it gone.
    self->services_.metrics.tabs_connected.Add();
    self->counted_ = true;
    self->Send(EncodeHelloAnswer(nlohmann::json::parse(self->hello_id_, nullptr, false),
                                 self->announcement_.account, self->announcement_.role,
                                 absl::StrCat("t-", self->services_.gateway_id, "-", self->tab_id_),
                                 agents));
    self->Send(EncodeNotification("relay/agents", {{"count", agents}}));
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
  hello_timer_.cancel();
  in_.Stop();
  out_.CloseWith(code, reason);
}

void TabSession::OnTabWriterDone() {
  Cleanup();
}

void TabSession::PostDrain() {
  GatheredPosts::Post(ws_.get_executor(), [self = shared_from_this()] {
    self->draining_ = true;
    self->MaybeEndDrain();
  });
}

void TabSession::MaybeEndDrain() {
  if (draining_ && calls_.empty() && phase_ != State::kClosing) {
    CloseWith(static_cast<uint16_t>(websocket::close_code::going_away), "relay shutting down");
  }
}

void TabSession::Cleanup() {
  if (cleaned_up_) {
    return;
  }
  cleaned_up_ = true;
  phase_ = State::kClosing;
  hello_timer_.cancel();
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
