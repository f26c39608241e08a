#include "absl/strings/string_view.h"
#include "gateway/http_session.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/websocket.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "gateway/jsonrpc.h"
#include "gateway/tab_session.h"

namespace relay::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;

namespace {

constexpr auto kIdleTimeout = std::chrono::seconds(120);
constexpr absl::string_view kUnauthorized =
    R"(Bearer realm="mcp-relay", error="invalid_token")";

absl::string_view PathOf(absl::string_view target) {
  return target.substr(0, target.find('?'));
}

std::string JsonMessage(absl::string_view message) {
  nlohmann::json body = {{"error", message}};
  return DumpJson(body);
}

}  // namespace

HttpSession::HttpSession(asio::ip::tcp::socket&& socket, GatewayState& state)
    : stream_(std::move(socket)), state_(state) {}

void HttpSession::Run() {
  // Start on the strand: the socket was accepted on another one.
  asio::dispatch(stream_.get_executor(),
                 beast::bind_front_handler(&HttpSession::DoReadHeader, shared_from_this()));
}

void HttpSession::DoReadHeader() {
  parser_.emplace();
  parser_->header_limit(16 * 1024);
  parser_->body_limit(state_.options.max_body_bytes);
  body_read_ = false;
  plan_.reset();
  call_.reset();
  stream_.expires_after(kIdleTimeout);
  http::async_read_header(stream_, buffer_, *parser_,
                          beast::bind_front_handler(&HttpSession::OnReadHeader,
                                                    shared_from_this()));
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
  auto it = req.find(boost::beast::string_view(name.data(), name.size()));
  if (it == req.end()) {
    return std::nullopt;
  }
  return std::string(it->value());
}

std::string HttpSession::ClientAddress() const {
  beast::error_code ec;
  auto endpoint = stream_.socket().remote_endpoint(ec);
  return ec ? "unknown" : endpoint.address().to_string();
}

void HttpSession::OnReadHeader(beast::error_code ec, size_t) {
  if (ec == http::error::end_of_stream) {
    return DoClose();
  }
  if (ec) {
    if (ec == http::error::header_limit) {
      return ReplyText(431, "request headers too large");
    }
    return;  // reset, timeout or garbage: nothing to answer
  }
  const auto& req = parser_->get();
  absl::string_view path = PathOf(absl::string_view(req.target().data(), req.target().size()));
  if (path == "/healthz" || path == "/readyz" || path == "/metrics") {
    return ServeOperator(path);
  }
  state_.metrics.http_requests.Add();
  if (absl::StartsWith(path, "/.well-known/")) {
    // OAuth discovery probes: the relay uses the host application's tokens.
    return ReplyText(404, "not found");
  }
  if (path != state_.options.mcp_path) {
    return ReplyText(404, absl::StrCat("not found; the MCP endpoint is ", state_.options.mcp_path));
  }
  auto host = Header(http::field::host);
  if (!host || !state_.IsAllowedHost(*host)) {
    return ReplyText(403, "host not allowed; add it to --allowed_hosts");
  }
  auto origin = Header(http::field::origin);
  if (websocket::is_upgrade(req)) {
    if (!origin || !state_.IsAllowedOrigin(*origin)) {
      return ReplyText(403, "origin not allowed; add it to --allowed_origins");
    }
    stream_.expires_never();
    std::make_shared<TabSession>(std::move(stream_), state_)->Run(parser_->release());
    return;
  }
  if (origin && !state_.IsAllowedOrigin(*origin)) {
    return ReplyText(403, "origin not allowed; add it to --allowed_origins");
  }
  http::verb method = req.method();
  if (method != http::verb::post && method != http::verb::get && method != http::verb::delete_) {
    return ReplyText(405, "use POST, GET or DELETE");
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
  state_.auth->VerifyToken(std::string(token), ClientAddress(),
                           [self = shared_from_this()](AuthVerdict verdict) {
                             asio::post(self->stream_.get_executor(),
                                        [self, verdict = std::move(verdict)]() mutable {
                                          self->OnVerified(std::move(verdict));
                                        });
                           });
}

void HttpSession::ServeOperator(absl::string_view path) {
  http::response<http::string_body> res{http::status::ok, 11};
  res.set(http::field::content_type, "text/plain");
  if (path == "/metrics") {
    res.set(http::field::content_type, "text/plain; version=0.0.4");
    res.body() = state_.RenderMetrics();
  } else if (path == "/readyz" && state_.router->ShardsUp() == 0) {
    res.result(http::status::service_unavailable);
    res.body() = "not ready: no router shard is reachable\n";
  } else {
    res.body() = "ok\n";
  }
  Write(std::move(res));
}

void HttpSession::OnVerified(AuthVerdict verdict) {
  switch (verdict.kind) {
    case AuthVerdict::Kind::kOk:
      break;
    case AuthVerdict::Kind::kInvalid: {
      state_.metrics.unauthorized.Add();
      http::response<http::string_body> res{http::status::unauthorized, 11};
      res.set(http::field::www_authenticate,
              beast::string_view(kUnauthorized.data(), kUnauthorized.size()));
      res.set(http::field::content_type, "application/json");
      res.body() = JsonMessage(
          "missing or invalid bearer token; create a token in the editor's account menu and "
          "send it as Authorization: Bearer <token>");
      return Write(std::move(res));
    }
    case AuthVerdict::Kind::kLockedOut: {
      state_.metrics.locked_out.Add();
      http::response<http::string_body> res{http::status::too_many_requests, 11};
      res.set(http::field::retry_after, std::to_string(verdict.retry_after_seconds));
      res.set(http::field::content_type, "application/json");
      res.body() = JsonMessage("too many failed attempts from this address; retry later");
      return Write(std::move(res));
    }
    case AuthVerdict::Kind::kUnavailable:
      state_.metrics.auth_unavailable.Add();
      return ReplyText(503,
                       "the account service could not be reached; your token was not rejected, "
                       "try again shortly");
  }
  account_ = std::move(verdict.user);
  if (parser_->get().method() == http::verb::post) {
    return DoReadBody();
  }
  Dispatch();
}

void HttpSession::DoReadBody() {
  http::async_read(stream_, buffer_, *parser_,
                   beast::bind_front_handler(&HttpSession::OnReadBody, shared_from_this()));
}

void HttpSession::OnReadBody(beast::error_code ec, size_t) {
  if (ec == http::error::body_limit) {
    return ReplyText(413, absl::StrCat("request body over ", state_.options.max_body_bytes,
                                       " bytes"));
  }
  if (ec) {
    return;
  }
  body_read_ = true;
  Dispatch();
}

void HttpSession::Dispatch() {
  const auto& req = parser_->get();
  const McpDispatcher& dispatcher = *state_.dispatcher;
  auto session_id = Header("mcp-session-id");
  auto version = Header("mcp-protocol-version");
  switch (req.method()) {
    case http::verb::post: {
      PostRequest post{account_, session_id, version, req.body()};
      auto decision = dispatcher.HandlePost(post);
      if (auto* reply = std::get_if<HttpReply>(&decision)) {
        return Reply(*reply);
      }
      plan_ = std::move(std::get<ForwardPlan>(decision));
      state_.metrics.forwards.Add();
      stream_.expires_never();
      call_ = state_.router->Forward(
          plan_->request, dispatcher.options().call_timeout,
          [self = shared_from_this()](ForwardOutcome outcome) {
            asio::post(self->stream_.get_executor(),
                       [self, outcome = std::move(outcome)]() mutable {
                         self->OnForwarded(std::move(outcome));
                       });
          });
      return;
    }
    case http::verb::delete_:
      return Reply(dispatcher.HandleDelete(account_, session_id, version));
    default: {
      // No standalone GET stream yet: 405 tells clients to go on without it.
      http::response<http::string_body> res{http::status::method_not_allowed, 11};
      res.set(http::field::allow, "POST, DELETE");
      res.set(http::field::content_type, "application/json");
      res.body() = JsonMessage("this server offers no GET stream");
      return Write(std::move(res));
    }
  }
}

void HttpSession::OnForwarded(ForwardOutcome outcome) {
  call_.reset();
  state_.metrics.forward_outcomes[static_cast<size_t>(outcome.kind)].Add();
  Reply(state_.dispatcher->FinishForward(*plan_, std::move(outcome)));
}

void HttpSession::Reply(const HttpReply& reply) {
  http::response<http::string_body> res{static_cast<http::status>(reply.status), 11};
  if (!reply.body.empty()) {
    res.set(http::field::content_type, "application/json");
    res.body() = reply.body;
  }
  if (!reply.session_id.empty()) {
    res.set("Mcp-Session-Id", reply.session_id);
  }
  Write(std::move(res));
}

void HttpSession::ReplyText(unsigned status, absl::string_view message) {
  http::response<http::string_body> res{static_cast<http::status>(status), 11};
  res.set(http::field::content_type, "application/json");
  res.body() = JsonMessage(message);
  Write(std::move(res));
}

void HttpSession::Write(http::response<http::string_body> response) {
  response.set(http::field::server, "mcp-tab-relay");
  // An unread body would be taken for the next request: close instead.
  const auto& req = parser_->get();
  bool body_pending = !body_read_ && (req.has_content_length() || req.chunked()) &&
                      !parser_->is_done();
  bool keep_alive = req.keep_alive() && !body_pending;
  response.keep_alive(keep_alive);
  response.prepare_payload();
  auto owned = std::make_shared<http::response<http::string_body>>(std::move(response));
  response_ = owned;
  stream_.expires_after(kIdleTimeout);
  http::async_write(stream_, *owned,
                    beast::bind_front_handler(&HttpSession::OnWrite, shared_from_this(),
                                              keep_alive));
}

void HttpSession::OnWrite(bool keep_alive, beast::error_code ec, size_t) {
  response_.reset();
  if (ec) {
    return;
  }
  if (!keep_alive) {
    return DoClose();
  }
  DoReadHeader();
}

void HttpSession::DoClose() {
  beast::error_code ec;
  stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
}

}  // namespace relay::gateway
