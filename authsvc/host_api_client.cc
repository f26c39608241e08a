#include "absl/strings/string_view.h"
#include "authsvc/host_api_client.h"

#include <chrono>
#include <deque>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

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
};

absl::StatusOr<Target> ParseBase(const std::string& base) {
  constexpr absl::string_view kScheme = "http://";
  if (!absl::StartsWith(base, kScheme)) {
    return absl::InvalidArgumentError("api_base must start with http://");
  }
  std::string rest = base.substr(kScheme.size());
  Target target;
  size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  target.path = slash == std::string::npos ? "/" : rest.substr(slash);
  size_t colon = authority.rfind(':');
  if (colon == std::string::npos) {
    target.host = authority;
    target.port = "80";
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
  Connection(Strand strand, Pool& pool) : stream_(strand), pool_(pool) {}
  void Run(Job job);
  bool connected() const { return connected_; }

 private:
  void DoConnect();
  void OnResolve(beast::error_code ec, tcp::resolver::results_type results);
  void OnConnect(beast::error_code ec, tcp::endpoint);
  void DoWrite();
  void OnWrite(beast::error_code ec, size_t);
  void OnRead(beast::error_code ec, size_t);
  void Fail(beast::error_code ec, absl::string_view stage);

  beast::tcp_stream stream_;
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
  Pool(asio::io_context& io, HostApiOptions options, Target target)
      : strand_(asio::make_strand(io)), options_(std::move(options)),
        target_(std::move(target)) {}

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
    }
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

 private:
  Strand strand_;
  HostApiOptions options_;
  Target target_;
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

void Connection::DoConnect() {
  auto resolver = std::make_shared<tcp::resolver>(stream_.get_executor());
  resolver->async_resolve(
      pool_.target().host, pool_.target().port,
      [self = shared_from_this(), resolver](beast::error_code ec,
                                            tcp::resolver::results_type results) {
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
  DoWrite();
}

void Connection::DoWrite() {
  http::async_write(stream_, request_,
                    beast::bind_front_handler(&Connection::OnWrite, shared_from_this()));
}

void Connection::OnWrite(beast::error_code ec, size_t) {
  if (ec) {
    return Fail(ec, "write");
  }
  response_ = {};
  http::async_read(stream_, buffer_, response_,
                   beast::bind_front_handler(&Connection::OnRead, shared_from_this()));
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
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
    connected_ = false;
  }
  stream_.expires_never();
  pool_.Release(keep ? shared_from_this() : nullptr);
}

void Connection::Fail(beast::error_code ec, absl::string_view stage) {
  stream_.close();
  connected_ = false;
  Job job = std::move(job_);
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
  // The pool must outlive the io_context's run: connections refer to it.
  return std::unique_ptr<HostApi>(new Pool(io, std::move(options), *std::move(target)));
}

}  // namespace relay::authsvc
