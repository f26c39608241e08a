#include "absl/strings/string_view.h"
#include "authsvc/host_api_client.h"

#include <chrono>
#include <deque>
#include <optional>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <openssl/ssl.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace relay::authsvc {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Strand = asio::strand<asio::io_context::executor_type>;

struct Target {
  std::string host;
  std::string port;
  std::string path;
  bool tls = false;
};

absl::StatusOr<Target> ParseBase(const std::string& base) {
  Target target;
  std::string rest;
  if (absl::StartsWith(base, "https://")) {
    target.tls = true;
    rest = base.substr(8);
  } else if (absl::StartsWith(base, "http://")) {
    rest = base.substr(7);
  } else {
    return absl::InvalidArgumentError("api_base must start with https:// or http://");
  }
  size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  target.path = slash == std::string::npos ? "/" : rest.substr(slash);
  size_t colon = authority.rfind(':');
  if (colon == std::string::npos) {
    target.host = authority;
    target.port = target.tls ? "443" : "80";
  } else {
    target.host = authority.substr(0, colon);
    target.port = authority.substr(colon + 1);
  }
  if (target.host.empty()) {
    return absl::InvalidArgumentError("api_base has no host");
  }
  return target;
}

struct Job {
  std::string route;
  std::string body;
  HostApi::Callback done;
  absl::Time deadline;
  bool retried = false;
};

class Pool;

// One keep-alive connection; runs on the pool's strand.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Strand strand, Pool& pool) : stream_(strand), resolve_timer_(strand), pool_(pool) {}
  void Run(Job job);
  bool connected() const { return connected_; }

 private:
  // f(stream): the TLS stream over https, else the TCP one.
  template <typename F>
  void WithStream(F&& f) {
    if (tls_) {
      f(*tls_);
    } else {
      f(stream_);
    }
  }
  void Close();
  void DoConnect();
  void OnResolve(beast::error_code ec, tcp::resolver::results_type results);
  void OnConnect(beast::error_code ec, tcp::endpoint);
  void OnHandshake(beast::error_code ec);
  void DoWrite();
  void OnWrite(beast::error_code ec, size_t);
  void OnRead(beast::error_code ec, size_t);
  void Fail(beast::error_code ec, absl::string_view stage);

  beast::tcp_stream stream_;
  // Over https: TLS on stream_ (whose deadline covers its reads and writes).
  std::optional<asio::ssl::stream<beast::tcp_stream&>> tls_;
  // The name lookup runs on Asio's resolver thread, outside stream_'s
  // deadline: this one bounds it.
  asio::steady_timer resolve_timer_;
  uint64_t lookups_ = 0;  // the lookup whose answer is awaited
  Pool& pool_;
  bool connected_ = false;
  bool reused_ = false;
  Job job_;
  http::request<http::string_body> request_;
  http::response<http::string_body> response_;
  beast::flat_buffer buffer_;
};

class Pool : public HostApi {
 public:
  Pool(asio::io_context& io, HostApiOptions options, Target target,
       std::unique_ptr<asio::ssl::context> tls)
      : strand_(asio::make_strand(io)), options_(std::move(options)),
        target_(std::move(target)), tls_(std::move(tls)), expiry_(strand_) {}

  void Post(std::string route, std::string json_body, Callback done) override {
    Job job{std::move(route), std::move(json_body), std::move(done),
            absl::Now() + options_.timeout};
    asio::post(strand_, [this, job = std::move(job)]() mutable { Dispatch(std::move(job)); });
  }

  // Strand only.
  void Dispatch(Job job) {
    if (!idle_.empty()) {
      auto conn = std::move(idle_.back());
      idle_.pop_back();
      conn->Run(std::move(job));
    } else if (busy_ < options_.max_connections) {
      ++busy_;
      std::make_shared<Connection>(strand_, *this)->Run(std::move(job));
    } else if (waiting_.size() >= options_.max_pending) {
      job.done(absl::ResourceExhaustedError(
          "too many requests are waiting for the host API (--max_pending_upstream)"));
    } else {
      waiting_.push_back(std::move(job));
      WatchWaiting();
    }
  }

  // Strand only. A waiting request is answered at its deadline even if no
  // connection frees up (every one stuck in a lookup, say). Jobs wait in the
  // order of their deadlines, so the first one's is the next.
  void WatchWaiting() {
    if (watching_ || waiting_.empty()) {
      return;
    }
    watching_ = true;
    // Rounded up: a wait rounded down to 0 ms would spin until the deadline.
    expiry_.expires_after(absl::ToChronoMilliseconds(absl::Ceil(
        std::max(absl::ZeroDuration(), waiting_.front().deadline - absl::Now()),
        absl::Milliseconds(1))));
    expiry_.async_wait([this](beast::error_code) {
      watching_ = false;
      absl::Time now = absl::Now();
      while (!waiting_.empty() && now >= waiting_.front().deadline) {
        Job late = std::move(waiting_.front());
        waiting_.pop_front();
        late.done(absl::DeadlineExceededError("host API did not answer in time"));
      }
      WatchWaiting();
    });
  }

  // Strand only: a connection finished a job. keep is null when it closed.
  void Release(std::shared_ptr<Connection> keep) {
    while (!waiting_.empty()) {
      Job next = std::move(waiting_.front());
      waiting_.pop_front();
      if (absl::Now() >= next.deadline) {
        next.done(absl::DeadlineExceededError("host API did not answer in time"));
        continue;
      }
      if (keep) {
        keep->Run(std::move(next));
      } else {
        std::make_shared<Connection>(strand_, *this)->Run(std::move(next));
      }
      return;
    }
    if (keep) {
      idle_.push_back(std::move(keep));
    } else {
      --busy_;
    }
  }

  const HostApiOptions& options() const { return options_; }
  const Target& target() const { return target_; }
  Strand strand() const { return strand_; }
  asio::ssl::context* tls() const { return tls_.get(); }

 private:
  Strand strand_;
  HostApiOptions options_;
  Target target_;
  std::unique_ptr<asio::ssl::context> tls_;  // over https
  asio::steady_timer expiry_;
  bool watching_ = false;
  std::vector<std::shared_ptr<Connection>> idle_;
  std::deque<Job> waiting_;
  int busy_ = 0;  // connections in existence (idle ones included)
};

void Connection::Run(Job job) {
  job_ = std::move(job);
  request_ = {};
  request_.method(http::verb::post);
  request_.version(11);
  request_.target(absl::StrCat(pool_.target().path, "?r=", job_.route));
  request_.set(http::field::host, pool_.target().host + ":" + pool_.target().port);
  request_.set(http::field::content_type, "application/json");
  request_.set(http::field::connection, "keep-alive");
  request_.set("X-Relay-Key", pool_.options().relay_key);
  request_.body() = job_.body;
  request_.prepare_payload();
  absl::Duration left = job_.deadline - absl::Now();
  if (left <= absl::ZeroDuration()) {
    left = absl::Milliseconds(1);
  }
  stream_.expires_after(absl::ToChronoMilliseconds(left));
  if (connected_) {
    reused_ = true;
    DoWrite();
  } else {
    reused_ = false;
    DoConnect();
  }
}

void Connection::Close() {
  tls_.reset();
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream_.close();
  connected_ = false;
}

void Connection::DoConnect() {
  auto resolver = std::make_shared<tcp::resolver>(stream_.get_executor());
  const uint64_t lookup = ++lookups_;
  resolve_timer_.expires_after(absl::ToChronoMilliseconds(
      std::max(absl::Milliseconds(1), job_.deadline - absl::Now())));
  resolve_timer_.async_wait([self = shared_from_this(), resolver, lookup](beast::error_code ec) {
    if (ec || self->lookups_ != lookup) {
      return;
    }
    // A getaddrinfo under way cannot be stopped (cancel only stops one not
    // begun): answer the job now, and leave the lookup's answer to no one.
    ++self->lookups_;
    resolver->cancel();
    self->Fail(beast::error::timeout, "resolve");
  });
  resolver->async_resolve(
      pool_.target().host, pool_.target().port,
      [self = shared_from_this(), resolver, lookup](beast::error_code ec,
                                                    tcp::resolver::results_type results) {
        if (self->lookups_ != lookup) {
          return;  // given up at the job's deadline
        }
        // Claimed here, so that a deadline already queued to run (cancel
        // cannot stop it) finds it no longer its own.
        ++self->lookups_;
        self->resolve_timer_.cancel();
        self->OnResolve(ec, std::move(results));
      });
}

void Connection::OnResolve(beast::error_code ec, tcp::resolver::results_type results) {
  if (ec) {
    return Fail(ec, "resolve");
  }
  stream_.async_connect(results, beast::bind_front_handler(&Connection::OnConnect,
                                                           shared_from_this()));
}

void Connection::OnConnect(beast::error_code ec, tcp::endpoint) {
  if (ec) {
    return Fail(ec, "connect");
  }
  connected_ = true;
  asio::ssl::context* context = pool_.tls();
  if (context == nullptr) {
    return DoWrite();
  }
  tls_.emplace(stream_, *context);
  const std::string& host = pool_.target().host;
  // The certificate must name the host dialled; a name is also sent (SNI).
  tls_->set_verify_callback(asio::ssl::host_name_verification(host));
  beast::error_code parse;
  asio::ip::make_address(host, parse);
  if (parse && SSL_set_tlsext_host_name(tls_->native_handle(), host.c_str()) != 1) {
    return Fail(asio::error::invalid_argument, "TLS setup");
  }
  tls_->async_handshake(asio::ssl::stream_base::client,
                        beast::bind_front_handler(&Connection::OnHandshake, shared_from_this()));
}

void Connection::OnHandshake(beast::error_code ec) {
  if (ec) {
    return Fail(ec, "TLS handshake");
  }
  DoWrite();
}

void Connection::DoWrite() {
  WithStream([this](auto& stream) {
    http::async_write(stream, request_,
                      beast::bind_front_handler(&Connection::OnWrite, shared_from_this()));
  });
}

void Connection::OnWrite(beast::error_code ec, size_t) {
  if (ec) {
    return Fail(ec, "write");
  }
  response_ = {};
  WithStream([this](auto& stream) {
    http::async_read(stream, buffer_, response_,
                     beast::bind_front_handler(&Connection::OnRead, shared_from_this()));
  });
}

void Connection::OnRead(beast::error_code ec, size_t) {
  if (ec) {
    return Fail(ec, "read");
  }
  HostReply reply;
  reply.status = static_cast<int>(response_.result_int());
  reply.body = std::move(response_.body());
  if (auto it = response_.find(http::field::retry_after); it != response_.end()) {
    reply.retry_after = std::string(it->value());
  }
  bool keep = response_.keep_alive();
  Job job = std::move(job_);
  job.done(std::move(reply));
  if (!keep) {
    Close();
  }
  stream_.expires_never();
  pool_.Release(keep ? shared_from_this() : nullptr);
}

void Connection::Fail(beast::error_code ec, absl::string_view stage) {
  Close();
  buffer_.clear();
  if (!job_.done) {
    return;  // answered already (at its deadline): nothing is owed, and the slot is given back
  }
  Job job = std::move(job_);
  job_.done = nullptr;
  // A kept-alive connection may have been closed by the server while idle:
  // that is not the host API failing, so try once more on a new connection.
  bool stale = reused_ && ec != beast::error::timeout && !job.retried;
  if (stale && absl::Now() < job.deadline) {
    job.retried = true;
    reused_ = false;
    Run(std::move(job));
    return;
  }
  if (ec == beast::error::timeout) {
    job.done(absl::DeadlineExceededError("host API did not answer in time"));
  } else {
    job.done(absl::UnavailableError(absl::StrCat("host API ", stage, " failed: ", ec.message())));
  }
  pool_.Release(nullptr);
}

}  // namespace

absl::StatusOr<std::unique_ptr<HostApi>> NewHostApiClient(asio::io_context& io,
                                                          HostApiOptions options) {
  auto target = ParseBase(options.api_base);
  if (!target.ok()) {
    return target.status();
  }
  std::unique_ptr<asio::ssl::context> tls;
  if (target->tls) {
    tls = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
    SSL_CTX_set_min_proto_version(tls->native_handle(), TLS1_2_VERSION);
    tls->set_verify_mode(asio::ssl::verify_peer);
    beast::error_code ec;
    if (options.ca_file.empty()) {
      tls->set_default_verify_paths(ec);
    } else {
      tls->load_verify_file(options.ca_file, ec);
    }
    if (ec) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot load the certificates to check the host API against (",
          options.ca_file.empty() ? "the system's" : options.ca_file, "): ", ec.message()));
    }
  } else if (!options.ca_file.empty()) {
    return absl::InvalidArgumentError("a CA file for the host API needs an https:// api_base");
  }
  // The pool must outlive the io_context's run: connections refer to it.
  return std::unique_ptr<HostApi>(
      new Pool(io, std::move(options), *std::move(target), std::move(tls)));
}

}  // namespace relay::authsvc
