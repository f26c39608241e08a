#include "gateway/net/http_session.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/websocket.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "gateway/core/jsonrpc.h"
#include "gateway/core/session_events.h"
#include "gateway/core/session_state.h"
#include "gateway/core/trusted_proxies.h"
#include "gateway/net/agent_stream.h"
#include "gateway/net/tab_session.h"

namespace relay::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;

namespace {

// A forwarded call starts watching for its agent going away after this.
constexpr auto kWatchAfter = std::chrono::milliseconds(20);
constexpr absl::string_view kUnauthorized = R"(Bearer realm="mcp-relay", error="invalid_token")";
constexpr uint64_t kMaxDiscard = 64 * 1024 * 1024;
// Unwritten output one agent connection may hold (events of a call it does not read).
constexpr size_t kMaxQueuedBytes = 16 * 1024 * 1024;

}  // namespace

HttpSession::HttpSession(asio::ip::tcp::socket&& socket, GatewayState& state)
    : stream_(std::move(socket)), state_(state), slot_(&state.connections),
      out_(stream_, *this, absl::ToChronoMilliseconds(state.options.sse_keepalive),
           kMaxQueuedBytes),
      timer_(stream_.get_executor()) {}

void HttpSession::Run() {
  // Start on the strand: the socket was accepted on another one.
  asio::dispatch(stream_.get_executor(),
                 beast::bind_front_handler(&HttpSession::DoReadHeader, shared_from_this()));
}

// ---------------------------------------------------------------- reading --

void HttpSession::DoReadHeader() {
  phase_ = Phase::kReading;
  parser_.emplace();
  parser_->header_limit(16 * 1024);
  // No limit while the header is read (Beast would fail an oversized
  // Content-Length right there); OnVerified checks it and answers 413.
  parser_->body_limit(boost::none);
  body_read_ = false;
  plan_.reset();
  call_ref_ = 0;
  if (buffer_.size() > 0) {
    return ReadHeaderBytes();  // pipelined: the next request is already here
  }
  // Nothing yet: wait for the first bytes, a keep-alive connection for
  // --idle_timeout, a new one only for --header_timeout.
  phase_ = Phase::kIdle;
  absl::Duration wait = std::exchange(first_request_, false) ? state_.options.header_timeout
                                                             : state_.options.idle_timeout;
  StartTimer(std::chrono::steady_clock::now() + absl::ToChronoMilliseconds(wait),
             &HttpSession::OnIdleTimeout);
  ReadSome();  // nothing to do if the last call's watch is still reading
}

void HttpSession::ReadHeaderBytes() {
  // However slowly the rest comes, the whole header has --header_timeout.
  stream_.expires_after(absl::ToChronoMilliseconds(state_.options.header_timeout));
  http::async_read_header(stream_, buffer_, *parser_,
                          beast::bind_front_handler(&HttpSession::OnReadHeader,
                                                    shared_from_this()));
}

void HttpSession::ReadSome() {
  if (read_in_flight_) {
    return;
  }
  read_in_flight_ = true;
  stream_.socket().async_read_some(
      buffer_.prepare(4096), beast::bind_front_handler(&HttpSession::OnBytes, shared_from_this()));
}

void HttpSession::OnBytes(beast::error_code ec, size_t bytes) {
  read_in_flight_ = false;
  if (!ec) {
    buffer_.commit(bytes);
  }
  switch (phase_) {
    case Phase::kClosed:
      // Close stopped this read to close the connection: it does so now.
      if (!ec || ec == asio::error::operation_aborted) {
        CloseLingering(stream_, shared_from_this());
      }
      return;
    case Phase::kIdle:
      if (ec) {
        return Close();  // gone, or idle too long: nothing to answer
      }
      StopTimer();
      return ReadHeaderBytes();
    default:
      // The watch of a call (or of its answer being written).
      if (ec) {
        // The agent went away: give up the call; the tab hears of it.
        CancelCall(RouterClient::CancelReason::kAgentGone);
        return Close();
      }
      // A pipelined request: kept for after the answer. The watch stops here
      // (it may only read into an empty buffer).
      return;
  }
}

void HttpSession::OnIdleTimeout() {
  if (phase_ == Phase::kIdle) {
    beast::error_code ignored;
    stream_.socket().cancel(ignored);  // OnBytes closes
  }
}

std::optional<std::string> HttpSession::Header(http::field field) const {
  const auto& req = parser_->get();
  auto it = req.find(field);
  if (it == req.end()) {
    return std::nullopt;
  }
  return std::string(it->value());
}

std::optional<std::string> HttpSession::Header(absl::string_view name) const {
  const auto& req = parser_->get();
  auto it = req.find(beast::string_view(name.data(), name.size()));
  if (it == req.end()) {
    return std::nullopt;
  }
  return std::string(it->value());
}

std::string HttpSession::ClientAddress() const {
  beast::error_code ec;
  auto endpoint = stream_.socket().remote_endpoint(ec);
  std::string peer = ec ? "unknown" : endpoint.address().to_string();
  return state_.proxies->ClientAddress(peer, Header("x-real-ip"), Header("x-forwarded-for"));
}

void HttpSession::OnReadHeader(beast::error_code ec, size_t) {
  if (ec == http::error::end_of_stream) {
    return Close();
  }
  if (ec) {
    if (ec == http::error::header_limit) {
      keep_alive_ = false;
      return ReplyText(431, "request headers too large");
    }
    return Close();  // reset, timeout or garbage: nothing to answer
  }
  const auto& req = parser_->get();
  keep_alive_ = req.keep_alive();
  auto host = Header(http::field::host);
  auto origin = Header(http::field::origin);
  RequestHead head;
  head.target = absl::string_view(req.target().data(), req.target().size());
  head.method = absl::string_view(req.method_string().data(), req.method_string().size());
  head.host = host;
  head.origin = origin;
  head.websocket_upgrade = websocket::is_upgrade(req);
  GateDecision decision = state_.gate.Decide(head, state_.draining.load());
  switch (decision.kind) {
    case GateDecision::Kind::kOperator:
      return ServeOperator(decision.path);
    case GateDecision::Kind::kRefuse:
      state_.metrics.http_requests.Add();
      keep_alive_ = keep_alive_ && !decision.close;
      return Respond(decision.status, "application/json", JsonErrorBody(decision.message),
                     decision.extra_headers);
    case GateDecision::Kind::kTab:
      state_.metrics.http_requests.Add();
      stream_.expires_never();
      phase_ = Phase::kClosed;
      out_.Stop();
      std::make_shared<TabSession>(std::move(stream_), state_, std::move(slot_))
          ->Run(parser_->release());
      return;
    case GateDecision::Kind::kAgent:
      state_.metrics.http_requests.Add();
      break;
  }
  Authorize();
}

void HttpSession::Authorize() {
  // An address the host API's brake locked out is answered here until its
  // Retry-After, without asking authsvc (the check costs nothing while no
  // address is locked out).
  if (!state_.lockouts.empty()) {
    if (auto left = state_.lockouts.Remaining(ClientAddress(), absl::Now())) {
      state_.metrics.locked_out.Add();
      return Respond(429, "application/json",
                     JsonErrorBody("too many failed attempts from this address; retry later"),
                     absl::StrCat("Retry-After: ", absl::ToInt64Seconds(absl::Ceil(*left, absl::Seconds(1))),
                                  "\r\n"));
    }
  }
  // The bearer is checked before the body is read: an unauthenticated client
  // never gets to upload 4 MiB.
  auto authorization = Header(http::field::authorization);
  absl::string_view token;
  if (authorization && authorization->size() > 7 &&
      absl::EqualsIgnoreCase(absl::string_view(*authorization).substr(0, 7), "Bearer ")) {
    token = absl::StripAsciiWhitespace(absl::string_view(*authorization).substr(7));
  }
  if (token.empty()) {
    return OnVerified(AuthVerdict{AuthVerdict::Kind::kInvalid, {}, {}, 0});
  }
  // Most requests are answered from the gateway's own memory of authsvc's
  // verdicts: no RPC, no thread handoff.
  std::string bearer(token);
  if (std::optional<AuthVerdict> known = state_.auth->Memoized(bearer)) {
    return OnVerified(*std::move(known));
  }
  phase_ = Phase::kAuthorizing;
  client_address_ = ClientAddress();
  state_.auth->VerifyToken(std::move(bearer), client_address_,
                           [self = shared_from_this()](AuthVerdict verdict) {
                             asio::post(self->stream_.get_executor(),
                                        [self, verdict = std::move(verdict)]() mutable {
                                          self->OnVerified(std::move(verdict));
                                        });
                           });
}

void HttpSession::ServeOperator(absl::string_view path) {
  if (path == "/metrics") {
    return Respond(200, "text/plain; version=0.0.4", state_.RenderMetrics());
  }
  if (path == "/readyz" && state_.draining.load()) {
    return Respond(503, "text/plain", "not ready: shutting down\n");
  }
  if (path == "/readyz" && state_.router->ShardsUp() == 0) {
    return Respond(503, "text/plain", "not ready: no router shard is reachable\n");
  }
  Respond(200, "text/plain", "ok\n");
}

void HttpSession::OnVerified(AuthVerdict verdict) {
  switch (verdict.kind) {
    case AuthVerdict::Kind::kOk:
      break;
    case AuthVerdict::Kind::kInvalid:
      state_.metrics.unauthorized.Add();
      return Respond(401, "application/json",
                     JsonErrorBody("missing or invalid bearer token; create a token in the "
                                 "editor's account menu and send it as Authorization: Bearer "
                                 "<token>"),
                     absl::StrCat("WWW-Authenticate: ", kUnauthorized, "\r\n"));
    case AuthVerdict::Kind::kLockedOut:
      state_.metrics.locked_out.Add();
      if (!client_address_.empty() && verdict.retry_after_seconds > 0) {
        absl::Time now = absl::Now();
        state_.lockouts.Put(client_address_, now + absl::Seconds(verdict.retry_after_seconds), now);
      }
      return Respond(429, "application/json",
                     JsonErrorBody("too many failed attempts from this address; retry later"),
                     absl::StrCat("Retry-After: ", verdict.retry_after_seconds, "\r\n"));
    case AuthVerdict::Kind::kUnavailable:
      state_.metrics.auth_unavailable.Add();
      return ReplyText(503,
                       "the account service could not be reached; your token was not rejected, "
                       "try again shortly");
  }
  account_ = std::move(verdict.user);
  headers_.session_id = Header("mcp-session-id");
  headers_.protocol_version = Header("mcp-protocol-version");
  auto accept = Header(http::field::accept);
  headers_.accepts_sse = accept && absl::StrContains(*accept, "text/event-stream");
  if (parser_->get().method() == http::verb::post) {
    auto length = parser_->content_length();
    if (length && *length > state_.options.max_body_bytes) {
      // Read the body to the end (up to a bound) before answering 413: many
      // clients fail on an answer that comes while they are still sending.
      if (*length <= kMaxDiscard) {
        return DiscardBody(*length);
      }
      keep_alive_ = false;
      return ReplyTooLarge();
    }
    parser_->body_limit(state_.options.max_body_bytes);
    return DoReadBody();
  }
  Dispatch();
}

void HttpSession::ReplyTooLarge() {
  ReplyText(413, absl::StrCat("request body over ", state_.options.max_body_bytes,
                              " bytes; send less"));
}

void HttpSession::DiscardBody(uint64_t remaining) {
  size_t buffered = static_cast<size_t>(std::min<uint64_t>(remaining, buffer_.size()));
  buffer_.consume(buffered);
  remaining -= buffered;
  if (remaining == 0) {
    body_read_ = true;
    return ReplyTooLarge();
  }
  stream_.async_read_some(
      buffer_.prepare(static_cast<size_t>(std::min<uint64_t>(remaining, 64 * 1024))),
      [self = shared_from_this(), remaining](beast::error_code ec, size_t bytes) {
        if (ec) {
          return self->Close();
        }
        self->buffer_.commit(bytes);
        self->DiscardBody(remaining);
      });
}

void HttpSession::DoReadBody() {
  http::async_read(stream_, buffer_, *parser_,
                   beast::bind_front_handler(&HttpSession::OnReadBody, shared_from_this()));
}

void HttpSession::OnReadBody(beast::error_code ec, size_t) {
  if (ec == http::error::body_limit) {
    return ReplyTooLarge();  // a chunked body over the limit
  }
  if (ec) {
    return Close();
  }
  body_read_ = true;
  Dispatch();
}

// ------------------------------------------------------------- dispatching --

void HttpSession::ToRouter(relay::v1::GatewayEvent event) {
  state_.router->Send(account_, std::move(event));
}

void HttpSession::Dispatch() {
  const McpDispatcher& dispatcher = *state_.dispatcher;
  switch (parser_->get().method()) {
    case http::verb::post: {
      PostDecision decision = dispatcher.HandlePost(account_, headers_, parser_->get().body());
      if (!decision.batch.empty()) {
        batch_ = std::move(decision.batch);
        batch_next_ = 0;
        batch_answers_.clear();
        return RunBatch();
      }
      Apply(decision);
      if (auto* plan = std::get_if<ForwardPlan>(&decision.action)) {
        return StartForward(std::move(*plan));
      }
      return Reply(std::get<HttpReply>(decision.action));
    }
    case http::verb::delete_: {
      HttpReply reply = dispatcher.HandleDelete(account_, headers_);
      if (reply.status == 204) {
        state_.ended->Add(*headers_.session_id);
        ToRouter(SessionEndEvent(account_, *headers_.session_id));
      }
      return Reply(reply);
    }
    default: {
      auto decision = dispatcher.HandleGet(account_, headers_);
      if (auto* reply = std::get_if<HttpReply>(&decision)) {
        return Reply(*reply);
      }
      return OpenStream(std::get<StreamPlan>(decision).session);
    }
  }
}

void HttpSession::RunBatch() {
  while (batch_next_ < batch_.size()) {
    PostDecision& item = batch_[batch_next_++];
    Apply(item);
    if (auto* plan = std::get_if<ForwardPlan>(&item.action)) {
      return StartForward(std::move(*plan));  // OnForwarded comes back here
    }
    const HttpReply& reply = std::get<HttpReply>(item.action);
    if (reply.status == 400 || reply.status == 404) {
      batch_.clear();
      return Reply(reply);  // the whole request is refused (bad version, session)
    }
    if (!reply.body.empty()) {
      batch_answers_.push_back(reply.body);
    }
  }
  batch_.clear();
  if (batch_answers_.empty()) {
    return Respond(202, "application/json", "");
  }
  Respond(200, "application/json", absl::StrCat("[", absl::StrJoin(batch_answers_, ","), "]"));
}

void HttpSession::Apply(const PostDecision& decision) {
  // The router learns of a new session at once, of a used one now and then.
  if (!decision.session.empty() &&
      (decision.new_session || state_.touches->ShouldTouch(decision.session, absl::Now()))) {
    ToRouter(SessionTouchEvent(account_, decision.session));
  }
  if (auto event = EffectEvent(account_, decision.session, decision.effect)) {
    ToRouter(*std::move(event));
  }
}

void HttpSession::OpenStream(const std::string& session) {
  uint64_t last_event_id = 0;
  if (auto last = Header("last-event-id")) {
    if (!absl::SimpleAtoi(*last, &last_event_id)) {
      last_event_id = 0;
    }
  }
  // The stream takes the connection over; this session ends here.
  phase_ = Phase::kClosed;
  StopTimer();
  out_.Stop();
  std::make_shared<AgentStream>(std::move(stream_), state_, std::move(slot_), account_, session)
      ->Run(last_event_id);
}

// ---------------------------------------------------------- forwarded call --

void HttpSession::StartForward(ForwardPlan plan) {
  phase_ = Phase::kForwarding;
  plan_ = std::move(plan);
  state_.metrics.forwards.Add();
  stream_.expires_never();
  // The router needs the params only once: they move; the rest is small.
  const ForwardRequest& planned = plan_->request;
  ForwardRequest request{planned.account, planned.session_id, planned.method,
                         std::move(plan_->request.params), planned.request_id,
                         planned.progress_token};
  call_ref_ = state_.router->Forward(std::move(request), shared_from_this());
  // Most calls are answered within milliseconds: watching the socket for the
  // agent going away costs system calls, so it starts only when a call lasts.
  auto now = std::chrono::steady_clock::now();
  call_deadline_ = now + absl::ToChronoMilliseconds(state_.dispatcher->options().call_timeout);
  StartTimer(std::min(call_deadline_, now + kWatchAfter), &HttpSession::OnCallLasting);
}

void HttpSession::OnCallLasting() {
  if (phase_ != Phase::kForwarding) {
    return;
  }
  if (buffer_.size() == 0) {
    ReadSome();
  }
  StartTimer(call_deadline_, &HttpSession::OnCallDeadline);
}

void HttpSession::OnCallDeadline() {
  CancelCall(RouterClient::CancelReason::kDeadline);
}

void HttpSession::CancelCall(RouterClient::CancelReason reason) {
  if (phase_ == Phase::kForwarding && call_ref_ != 0) {
    StopTimer();
    // The waiter hears kTimeout or kCancelled through OnCallDone.
    state_.router->Cancel(account_, std::exchange(call_ref_, 0), reason);
  }
}

void HttpSession::OnCallEvent(std::string message) {
  asio::post(stream_.get_executor(), [self = shared_from_this(), message = std::move(message)]() mutable {
    self->OnForwardEvent(std::move(message));
  });
}

void HttpSession::OnCallDone(ForwardOutcome outcome) {
  asio::post(stream_.get_executor(), [self = shared_from_this(), outcome = std::move(outcome)]() mutable {
    self->OnForwarded(std::move(outcome));
  });
}

void HttpSession::OnForwardEvent(std::string message) {
  if (phase_ != Phase::kForwarding) {
    return;
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
    out_.StartSse();
  }
  out_.SendEvent(state_.dispatcher->AgentEvent(*plan_, std::move(message)));
}

void HttpSession::OnForwarded(ForwardOutcome outcome) {
  if (phase_ != Phase::kForwarding) {
    return;
  }
  call_ref_ = 0;
  StopTimer();
  phase_ = Phase::kReading;  // answering; the watch, if any, goes on
  state_.metrics.forward_outcomes[static_cast<size_t>(outcome.kind)].Add();
  HttpReply reply = state_.dispatcher->FinishForward(*plan_, std::move(outcome));
  if (!batch_.empty()) {
    batch_answers_.push_back(std::move(reply.body));
    return RunBatch();
  }
  if (!out_.in_sse()) {
    return Reply(reply);
  }
  out_.SendEvent(reply.body);
  out_.EndSse(keep_alive_);
}

// ------------------------------------------------------------------ timer --

void HttpSession::StartTimer(std::chrono::steady_clock::time_point at,
                             void (HttpSession::*then)()) {
  timer_.expires_at(at);
  timer_.async_wait([self = shared_from_this(), seq = ++timer_seq_, then](beast::error_code ec) {
    if (!ec && self->timer_seq_ == seq) {
      ((*self).*then)();
    }
  });
}

void HttpSession::StopTimer() {
  ++timer_seq_;
  timer_.cancel();
}

// ------------------------------------------------------------------ output --

void HttpSession::Respond(int status, absl::string_view content_type, absl::string_view body,
                          absl::string_view extra_headers) {
  // An unread body would be taken for the next request: close instead.
  const auto& req = parser_->get();
  bool body_pending =
      !body_read_ && (req.has_content_length() || req.chunked()) && !parser_->is_done();
  if (body_pending) {
    keep_alive_ = false;
  }
  out_.Respond(status, content_type, body, extra_headers, keep_alive_);
}

void HttpSession::Reply(const HttpReply& reply) {
  std::string extra;
  if (!reply.session_id.empty()) {
    extra = absl::StrCat("Mcp-Session-Id: ", reply.session_id, "\r\n");
  }
  Respond(reply.status, "application/json", reply.body, extra);
}

void HttpSession::ReplyText(int status, absl::string_view message) {
  Respond(status, "application/json", JsonErrorBody(message));
}

void HttpSession::OnResponseWritten(AfterResponse next) {
  if (phase_ == Phase::kClosed) {
    return;
  }
  if (next == AfterResponse::kReadNext) {
    return DoReadHeader();
  }
  Close();
}

void HttpSession::OnWriteFailed() {
  CancelCall(RouterClient::CancelReason::kAgentGone);
  Close();
}

void HttpSession::Close() {
  if (phase_ == Phase::kClosed) {
    return;
  }
  phase_ = Phase::kClosed;
  StopTimer();
  out_.Stop();
  if (read_in_flight_) {
    // The watch holds the read side: stop it; OnBytes closes.
    beast::error_code ignored;
    stream_.socket().cancel(ignored);
    return;
  }
  CloseLingering(stream_, shared_from_this());
}

}  // namespace relay::gateway
