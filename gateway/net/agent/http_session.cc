#include "gateway/net/agent/http_session.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/websocket.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "common/slab_pool.h"
#include "common/text.h"
#include "gateway/core/jsonrpc.h"
#include "gateway/core/router_events.h"
#include "gateway/core/session_state.h"
#include "gateway/core/trusted_proxies.h"
#include "gateway/net/agent/agent_stream.h"
#include "gateway/net/gathered_posts.h"
#include "gateway/net/tab/tab_session.h"

namespace relay::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;

namespace {

// A body over --max_body_bytes, up to this size, is read and dropped so that the 413
// keeps the connection; a larger one closes it.
constexpr uint64_t kMaxDiscard = 64 * 1024 * 1024;

}  // namespace

HttpSession::HttpSession(asio::ip::tcp::socket&& socket, GatewayState& state)
    : stream_(std::move(socket)), state_(state), slot_(&state.connections),
      admission_(state, *this, stream_.get_executor()),
      in_(stream_, *this,
          {absl::ToChronoMilliseconds(state.options.header_timeout),
           absl::ToChronoMilliseconds(state.options.idle_timeout)}),
      out_(stream_.socket(), *this, absl::ToChronoMilliseconds(state.options.sse_keepalive),
           MaxQueuedBytes(state.options), absl::ToChronoMilliseconds(state.options.idle_timeout),
           absl::ToChronoMilliseconds(state.options.idle_timeout)),
      lasting_(&LastingCalls::Of(stream_.get_executor())), timer_(stream_.get_executor()),
      round_timer_(stream_.get_executor()) {}

void HttpSession::Run() {
  // Start on its I/O thread: the socket was accepted on the first one.
  asio::dispatch(stream_.get_executor(),
                 beast::bind_front_handler(&HttpSession::ReadNext, shared_from_this()));
}

// ------------------------------------------------------------- admission --

void HttpSession::ReadNext() {
  phase_ = Phase::kReading;
  plan_.reset();
  call_ref_ = 0;
  in_.ReadNext();
}

std::string HttpSession::BearerSha256() const {
  return admission_.bearer_sha256();  // of this request's bearer: admitted before a stream opens
}

std::string HttpSession::ClientAddress() const {
  beast::error_code ec;
  auto endpoint = stream_.socket().remote_endpoint(ec);
  std::string peer = ec ? "unknown" : endpoint.address().to_string();
  return state_.proxies->ClientAddress(peer, in_.Header("x-real-ip"),
                                       in_.Header("x-forwarded-for"));
}

void HttpSession::OnHeaderTooLarge() {
  keep_alive_ = false;
  Refuse(RequestGate::RefuseRequest(431, "request headers too large"));
}

void HttpSession::OnBodyTooLarge() {
  Refuse(RequestGate::RefuseRequest(
      413, absl::StrCat("request body over ", state_.options.max_body_bytes, " bytes; send less")));
}

void HttpSession::OnPeerGone() {
  // Closed, reset, idle too long, or garbage: give up the call, if any (the
  // tab hears of it); nothing to answer.
  if (in_.TimedOut()) {
    state_.metrics.request_timeouts.Add();
  }
  CancelCall(RouterClient::CancelReason::kAgentGone);
  Close();
}

void HttpSession::OnHeader() {
  const auto& req = in_.parser().get();
  keep_alive_ = req.keep_alive();
  RequestHead head;
  head.target = absl::string_view(req.target().data(), req.target().size());
  head.method = absl::string_view(req.method_string().data(), req.method_string().size());
  head.host = in_.Header(http::field::host);
  head.origin = in_.Header(http::field::origin);
  head.websocket_upgrade = websocket::is_upgrade(req);
  if (head.websocket_upgrade) {
    head.ws_version = in_.Header(http::field::sec_websocket_version);
    head.ws_key = in_.Header(http::field::sec_websocket_key);
  }
  GateDecision decision = state_.gate.Decide(head, state_.draining.load());
  switch (decision.kind) {
    case GateDecision::Kind::kOperator: {
      GatewayState::OperatorAnswer answer = state_.AnswerOperator(decision.path);
      return Respond(answer.status, answer.content_type, answer.body, "", /*mcp_path=*/false);
    }
    case GateDecision::Kind::kRefuse:
      state_.metrics.http_requests.Add();
      keep_alive_ = keep_alive_ && !decision.close;
      return Refuse(decision);
    case GateDecision::Kind::kTab:
      state_.metrics.http_requests.Add();
      // The tab session takes the connection over; this one ends here.
      common::MakeSlabShared<TabSession>(HandOver(), state_.ForTab(), std::move(slot_))
          ->Run(head.ws_key.value_or(""));
      return;
    case GateDecision::Kind::kMetadata:
      return AnswerMetadata(head.method);
    case GateDecision::Kind::kAgent:
      state_.metrics.http_requests.Add();
      // The bearer is checked before the body is read: an unauthenticated
      // client never gets to upload 4 MiB.
      admission_.Check(in_.Header(http::field::authorization).value_or(""),
                       [this] { return ClientAddress(); });
      if (admission_.pending()) {
        in_.ReleaseIdleBuffer();
      }
      return;
  }
}

void HttpSession::AnswerMetadata(absl::string_view method) {
  // Public, the same on every gateway, and read by browser-based clients from other origins
  // (the MCP Inspector): cacheable, and CORS without credentials.
  constexpr absl::string_view kCors =
      "Access-Control-Allow-Origin: *\r\n"
      "Access-Control-Allow-Methods: GET\r\n"
      "Access-Control-Allow-Headers: mcp-protocol-version\r\n";
  if (method == "OPTIONS") {
    return Respond(204, "", "", kCors, /*mcp_path=*/false);
  }
  if (method != "GET") {
    return Respond(405, "application/json", JsonErrorBody("use GET"),
                   absl::StrCat("Allow: GET\r\n", kCors), /*mcp_path=*/false);
  }
  Respond(200, "application/json", state_.gate.options().resource.metadata(),
          absl::StrCat("Cache-Control: public, max-age=3600\r\n", kCors), /*mcp_path=*/false);
}

void HttpSession::OnRefused(const GateDecision& refusal) {
  Refuse(refusal);
}

void HttpSession::OnAdmitted(std::string account, std::string role) {
  account_ = std::move(account);
  headers_.role = std::move(role);
  // Kept while the call lasts, past the parser (which the next request resets).
  auto copy = [this](absl::string_view name) -> std::optional<std::string> {
    if (auto value = in_.Header(name)) {
      return std::string(*value);
    }
    return std::nullopt;
  };
  headers_.session_id = copy("mcp-session-id");
  headers_.protocol_version = copy("mcp-protocol-version");
  headers_.mcp_method = copy("mcp-method");
  headers_.mcp_name = copy("mcp-name");
  headers_.token_key.clear();
  if (headers_.protocol_version == kModernVersion) {
    // A 2026-07-28 agent has no session: the router knows it by its token's
    // hash (half of a SHA-256 is plenty to tell tokens apart).
    headers_.token_key =
        state_.dispatcher->TokenKey(in_.Header(http::field::authorization).value_or(""));
  }
  auto accept = in_.Header(http::field::accept);
  headers_.accepts_sse = accept && absl::StrContains(*accept, "text/event-stream");
  if (in_.parser().get().method() != http::verb::post) {
    return Dispatch();
  }
  std::optional<uint64_t> length = in_.ContentLength();
  // A client that said "Expect: 100-continue" waits to be told before it
  // sends its body (curl does, past 1 MiB): told to go on, or refused at once.
  auto expect = in_.Header(http::field::expect);
  const bool waits = expect && absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(*expect),
                                                      "100-continue");
  if (length && *length > state_.options.max_body_bytes) {
    if (*length <= kMaxDiscard && !waits) {
      return in_.DiscardBody(*length);
    }
    keep_alive_ = false;
    return OnBodyTooLarge();
  }
  if (waits) {
    out_.Continue();
  }
  in_.ReadBody(state_.options.max_body_bytes, length);
}

void HttpSession::OnBody() {
  Dispatch();
}

// ------------------------------------------------------------- dispatching --

void HttpSession::ToRouter(relay::v1::GatewayEvent event) {
  state_.router->Send(account_, std::move(event));
}

void HttpSession::Dispatch() {
  const McpDispatcher& dispatcher = *state_.dispatcher;
  switch (in_.parser().get().method()) {
    case http::verb::post: {
      PostDecision decision = dispatcher.HandlePost(account_, headers_, in_.parser().get().body());
      if (!decision.batch.empty()) {
        batch_ = std::move(decision.batch);
        batch_next_ = 0;
        batch_answers_.clear();
        batch_bytes_ = 0;
        return RunBatch();
      }
      Apply(decision);
      if (auto* plan = std::get_if<ForwardPlan>(&decision.action)) {
        return StartForward(std::move(*plan));
      }
      if (auto* listen = std::get_if<ListenPlan>(&decision.action)) {
        return OpenListen(std::move(*listen));
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

void HttpSession::AddBatchAnswer(std::string body, const nlohmann::json& id) {
  const size_t room = state_.dispatcher->options().max_batch_answer_bytes;
  if (batch_bytes_ + body.size() > room) {
    body = BatchAnswerTooLarge(id, room);
  }
  batch_bytes_ += body.size() + 1;
  batch_answers_.push_back(std::move(body));
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
      batch_bytes_ += reply.body.size() + 1;
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
  state_.metrics.mcp_messages[decision.method_label].Add();
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
  if (auto last = in_.Header("last-event-id")) {
    if (!absl::SimpleAtoi(*last, &last_event_id)) {
      last_event_id = 0;
    }
  }
  // The stream takes the connection over; this session ends here.
  common::MakeSlabShared<AgentStream>(HandOver(), state_.ForStream(), std::move(slot_), account_,
                                      headers_.role, session, BearerSha256())
      ->Run(last_event_id, admission_.revocation_mark());
}

asio::ip::tcp::socket HttpSession::HandOver() {
  phase_ = Phase::kClosed;
  StopTimer();
  in_.StopWaiting();
  out_.Stop();
  stream_.expires_never();
  return stream_.release_socket();
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
                          absl::string_view extra_headers, bool mcp_path) {
  // An unread body would be taken for the next request: close instead.
  if (in_.BodyUnread()) {
    keep_alive_ = false;
  }
  // Operator endpoints (/metrics, probes) are not the MCP path's responses.
  if (mcp_path) {
    state_.metrics.CountResponse(status);
  }
  out_.Respond(status, content_type, body, extra_headers, keep_alive_);
}

void HttpSession::Reply(const HttpReply& reply) {
  std::string extra;
  if (!reply.session_id.empty()) {
    extra = absl::StrCat("Mcp-Session-Id: ", reply.session_id, "\r\n");
  }
  if (!reply.allow.empty()) {
    absl::StrAppend(&extra, "Allow: ", reply.allow, "\r\n");
  }
  Respond(reply.status, "application/json", reply.body, extra);
}

void HttpSession::Refuse(const GateDecision& refusal) {
  Respond(refusal.status, "application/json", JsonErrorBody(refusal.message),
          refusal.extra_headers);
}

void HttpSession::OnResponseWritten(AfterResponse next) {
  if (phase_ == Phase::kClosed) {
    return;
  }
  if (next == AfterResponse::kReadNext) {
    return ReadNext();
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
  in_.Close();
}

}  // namespace relay::gateway
