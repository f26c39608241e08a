#include "common/metrics.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include <boost/asio/steady_timer.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace relay::common {

namespace {

// A sample's value in full: counters past a million must not turn into
// "1.23457e+06" (absl::StrCat keeps six digits).
std::string FormatValue(double value) {
  if (value == std::floor(value) && std::fabs(value) < 9007199254740992.0) {
    return absl::StrCat(static_cast<int64_t>(value));
  }
  return absl::StrFormat("%.17g", value);
}

}  // namespace

void MetricsText::Add(const std::string& name, const std::string& help, const std::string& type,
                      double value, const std::string& labels) {
  if (name != last_name_) {
    absl::StrAppend(&text_, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
    last_name_ = name;
  }
  absl::StrAppend(&text_, name, labels.empty() ? "" : absl::StrCat("{", labels, "}"), " ",
                  FormatValue(value), "\n");
}

void Histogram::Observe(double seconds) {
  size_t i = 0;
  while (i < kBuckets - 1 && seconds > kBounds[i]) {
    ++i;
  }
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(static_cast<uint64_t>(std::max(0.0, seconds) * 1e9),
                    std::memory_order_relaxed);
}

uint64_t Histogram::count() const {
  uint64_t total = 0;
  for (size_t i = 0; i < kBuckets; ++i) {
    total += bucket(i);
  }
  return total;
}

double Histogram::Quantile(double q) const {
  uint64_t total = count();
  if (total == 0) {
    return 0;
  }
  uint64_t cumulative = 0;
  for (size_t i = 0; i + 1 < kBuckets; ++i) {
    cumulative += bucket(i);
    if (static_cast<double>(cumulative) >= q * static_cast<double>(total)) {
      return kBounds[i];
    }
  }
  return kBounds[kBuckets - 2];
}

void MetricsText::AddHistogram(const std::string& name, const std::string& help,
                               const Histogram& histogram, const std::string& labels) {
  if (name != last_name_) {
    absl::StrAppend(&text_, "# HELP ", name, " ", help, "\n# TYPE ", name, " histogram\n");
    last_name_ = name;
  }
  std::string prefix = labels.empty() ? "" : absl::StrCat(labels, ",");
  uint64_t cumulative = 0;
  for (size_t i = 0; i < Histogram::kBuckets; ++i) {
    cumulative += histogram.bucket(i);
    std::string le = i + 1 < Histogram::kBuckets ? absl::StrCat(Histogram::kBounds[i]) : "+Inf";
    absl::StrAppend(&text_, name, "_bucket{", prefix, "le=\"", le, "\"} ", cumulative, "\n");
  }
  std::string braces = labels.empty() ? "" : absl::StrCat("{", labels, "}");
  absl::StrAppend(&text_, name, "_sum", braces, " ", FormatValue(histogram.sum()), "\n");
  absl::StrAppend(&text_, name, "_count", braces, " ", cumulative, "\n");
}

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// Serves one request per connection, sequentially: scrapes are rare and
// small, and this keeps the listener out of the services' hot paths.
class BeastMetricsServer final : public MetricsServer {
 public:
  BeastMetricsServer(std::function<std::string()> render, OperatorHandler handler)
      : render_(std::move(render)), handler_(std::move(handler)), acceptor_(io_) {}

  ~BeastMetricsServer() override {
    io_.stop();
    if (thread_.joinable()) {
      thread_.join();
    }
  }

  absl::Status Listen(const std::string& listen) {
    size_t colon = listen.rfind(':');
    int port = 0;
    if (colon == std::string::npos || !absl::SimpleAtoi(listen.substr(colon + 1), &port)) {
      return absl::InvalidArgumentError(absl::StrCat("bad --metrics_listen ", listen));
    }
    beast::error_code ec;
    auto address = asio::ip::make_address(listen.substr(0, colon), ec);
    tcp::endpoint endpoint(address, static_cast<unsigned short>(port));
    if (!ec) acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(16, ec);
    if (ec) {
      return absl::UnavailableError(absl::StrCat("cannot listen on ", listen, ": ", ec.message()));
    }
    DoAccept();
    thread_ = std::thread([this] { io_.run(); });
    return absl::OkStatus();
  }

  int port() const override {
    beast::error_code ec;
    return acceptor_.local_endpoint(ec).port();
  }

 private:
  struct Exchange {
    explicit Exchange(tcp::socket s) : stream(std::move(s)) {}
    beast::tcp_stream stream;
    beast::flat_buffer buffer;
    http::request<http::string_body> request;
    http::response<http::string_body> response;
  };

  void DoAccept() {
    acceptor_.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted) {
        return;  // stopped
      }
      if (ec) {
        // Out of descriptors or another passing failure: try again shortly
        // rather than stop serving /metrics for good (or spin).
        retry_.expires_after(std::chrono::milliseconds(100));
        retry_.async_wait([this](beast::error_code ec) {
          if (!ec) {
            DoAccept();
          }
        });
        return;
      }
      auto exchange = std::make_shared<Exchange>(std::move(socket));
      exchange->stream.expires_after(std::chrono::seconds(10));
      http::async_read(exchange->stream, exchange->buffer, exchange->request,
                       [this, exchange](beast::error_code ec, size_t) {
                         if (!ec) {
                           Answer(exchange);
                         }
                       });
      DoAccept();
    });
  }

  std::optional<OperatorReply> Route(const http::request<http::string_body>& request) {
    if (handler_ == nullptr) {
      return std::nullopt;
    }
    OperatorRequest r;
    r.method = std::string(request.method_string());
    r.target = std::string(request.target());
    auto signature = request.find("X-Relay-Signature");
    if (signature != request.end()) {
      r.relay_signature = std::string(signature->value());
    }
    r.body = request.body();
    return handler_(r);
  }

  void Answer(const std::shared_ptr<Exchange>& exchange) {
    auto& res = exchange->response;
    res.version(11);
    res.keep_alive(false);
    auto target = exchange->request.target();
    if (target == "/healthz") {
      res.result(http::status::ok);
      res.set(http::field::content_type, "text/plain");
      res.body() = "ok\n";
    } else if (target == "/metrics") {
      res.result(http::status::ok);
      res.set(http::field::content_type, "text/plain; version=0.0.4");
      res.body() = render_();
    } else if (std::optional<OperatorReply> reply = Route(exchange->request)) {
      res.result(static_cast<http::status>(reply->status));
      res.set(http::field::content_type, "application/json");
      res.body() = std::move(reply->body);
    } else {
      res.result(http::status::not_found);
      res.set(http::field::content_type, "text/plain");
      res.body() = "not found: try /metrics or /healthz\n";
    }
    res.prepare_payload();
    http::async_write(exchange->stream, res, [exchange](beast::error_code, size_t) {
      beast::error_code ignored;
      exchange->stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    });
  }

  std::function<std::string()> render_;
  OperatorHandler handler_;
  asio::io_context io_{1};
  tcp::acceptor acceptor_;
  asio::steady_timer retry_{io_};
  std::thread thread_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const std::string& listen, std::function<std::string()> render, OperatorHandler handler) {
  auto server = std::make_unique<BeastMetricsServer>(std::move(render), std::move(handler));
  if (absl::Status status = server->Listen(listen); !status.ok()) {
    return status;
  }
  return server;
}

}  // namespace relay::common
