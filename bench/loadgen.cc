// relay-loadgen: an open-loop HTTP/1.1 load generator for the benchmark. Requests are
// scheduled at a fixed rate whatever the server does (unlike wrk, which waits for each
// answer), and each latency is measured from the request's scheduled time, so that queueing
// shows (no coordinated omission). Prints one JSON line of figures.
//
// Beside the load, a thread that only sleeps 1 ms at a time measures how late the machine wakes
// it ("stalls": a vCPU descheduled by the host, or a run queue too long). On a shared virtual
// machine those stalls, not the server, can set the tail; the figures say how many there were.
//   relay-loadgen --url http://127.0.0.1:PORT/mcp --rate 5000 --seconds 5 --connections 32
//                 --headers "Name: value|Name: value" --body '{...}'
// With --stdin_headers, each line of standard input is one more set of headers (a bearer token
// stays off the command line); connection i sends set i modulo their number: one line per
// account gives each account its own connections. With --closed, each connection sends its next
// request as soon as the last is answered (an agent calling one tool after another), and the
// figures add each connection's calls per second: the slowest against the median shows whether
// an account starves.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
#include <iostream>
#include <map>
#include <functional>
#include <optional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

ABSL_FLAG(std::string, url, "", "http://HOST:PORT/PATH");
ABSL_FLAG(double, rate, 1000, "requests per second, scheduled at fixed intervals");
ABSL_FLAG(double, seconds, 5, "how long to send");
ABSL_FLAG(int, connections, 32, "keep-alive connections");
ABSL_FLAG(std::string, headers, "", "extra headers, Name: value, separated by |");
ABSL_FLAG(std::string, body, "", "POST body (GET when empty)");
ABSL_FLAG(bool, stdin_headers, false, "read one set of headers per line from standard input");
ABSL_FLAG(bool, closed, false, "closed loop: each connection sends again once answered");
ABSL_FLAG(bool, calls, false,
          "also print every answered call: when it was due (ms since the epoch) and its latency");

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Clock = std::chrono::steady_clock;

struct Figures {
  std::vector<double> latencies_us;
  // With --calls: each answered call's due time and latency, in the order answered.
  bool keep_calls = false;
  std::vector<std::pair<Clock::time_point, double>> calls;
  uint64_t errors = 0;
  uint64_t non_200 = 0;
  // The errors by step and reason ("read: end of stream"), so that a run says what failed.
  std::map<std::string, uint64_t> error_kinds;
  // When the first errors came; printed in seconds since the load began (below 0: while the
  // connections were being made).
  std::vector<Clock::time_point> error_times;
  Clock::time_point started;

  void Failed(const char* step, const beast::error_code& ec) {
    ++errors;
    ++error_kinds[absl::StrCat(step, ": ", ec.message())];
    if (error_times.size() < 10) {
      error_times.push_back(Clock::now());
    }
  }
};

// The error kinds as JSON members.
std::string ErrorKinds(const Figures& figures) {
  std::string out;
  for (const auto& [kind, count] : figures.error_kinds) {
    std::string key;
    for (char c : kind) {
      if (c == '"' || c == '\\') key += '\\';
      key += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
    }
    absl::StrAppend(&out, out.empty() ? "" : ",", "\"", key, "\":", count);
  }
  return out;
}

std::string ErrorTimes(const Figures& figures) {
  std::string out;
  for (Clock::time_point at : figures.error_times) {
    absl::StrAppend(&out, out.empty() ? "" : ",",
                    absl::StrFormat("%.3f", std::chrono::duration<double>(at - figures.started).count()));
  }
  return out;
}

// With --calls: ,"calls":[[due_unix_ms,latency_ms],...], the due times on the wall clock.
std::string CallsMember(const Figures& figures, std::chrono::system_clock::time_point start_wall) {
  if (!figures.keep_calls) {
    return "";
  }
  const double start_ms =
      std::chrono::duration<double, std::milli>(start_wall.time_since_epoch()).count();
  std::string out = ",\"calls\":[";
  for (size_t i = 0; i < figures.calls.size(); ++i) {
    const auto& [due, took_us] = figures.calls[i];
    double due_ms = start_ms + std::chrono::duration<double, std::milli>(due - figures.started).count();
    absl::StrAppend(&out, i ? "," : "", absl::StrFormat("[%.3f,%.3f]", due_ms, took_us / 1000));
  }
  return out + "]";
}

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(asio::io_context& io, const asio::ip::tcp::endpoint& endpoint,
             std::string request, Figures& figures, std::function<void(Connection*)> idle)
      : socket_(io), endpoint_(endpoint), request_(std::move(request)), figures_(figures),
        idle_(std::move(idle)) {}

  uint64_t answered() const { return answered_; }

  void Start() {
    socket_.async_connect(endpoint_, [self = shared_from_this()](beast::error_code ec) {
      if (ec) {
        self->figures_.Failed("connect", ec);
        return;
      }
      self->socket_.set_option(asio::ip::tcp::no_delay(true));
      self->idle_(self.get());
    });
  }

  void Send(Clock::time_point scheduled) {
    scheduled_ = scheduled;
    asio::async_write(socket_, asio::buffer(request_),
                      [self = shared_from_this()](beast::error_code ec, size_t) {
                        if (ec) {
                          self->figures_.Failed("write", ec);
                          return;
                        }
                        self->Read();
                      });
  }

 private:
  void Read() {
    parser_.emplace();
    parser_->body_limit(64 * 1024 * 1024);
    http::async_read(socket_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       if (ec) {
                         self->figures_.Failed("read", ec);
                         return;
                       }
                       auto took = Clock::now() - self->scheduled_;
                       double took_us = std::chrono::duration<double, std::micro>(took).count();
                       self->figures_.latencies_us.push_back(took_us);
                       if (self->figures_.keep_calls) {
                         self->figures_.calls.emplace_back(self->scheduled_, took_us);
                       }
                       if (self->parser_->get().result_int() != 200) {
                         ++self->figures_.non_200;
                       }
                       ++self->answered_;
                       self->idle_(self.get());
                     });
  }

  asio::ip::tcp::socket socket_;
  asio::ip::tcp::endpoint endpoint_;
  const std::string request_;
  Figures& figures_;
  uint64_t answered_ = 0;
  std::function<void(Connection*)> idle_;
  beast::flat_buffer buffer_;
  std::optional<http::response_parser<http::string_body>> parser_;
  Clock::time_point scheduled_;
};

// How late a thread that sleeps 1 ms at a time is woken, while the load runs.
class StallMeter {
 public:
  StallMeter() : thread_([this] { Run(); }) {}
  ~StallMeter() { Stop(); }

  void Stop() {
    stop_ = true;
    if (thread_.joinable()) {
      thread_.join();
    }
  }

  // Call after Stop().
  uint64_t at_least_1ms() const { return at_least_1ms_; }
  uint64_t at_least_2ms() const { return at_least_2ms_; }
  double longest_ms() const { return longest_us_ / 1000; }
  double total_ms() const { return total_us_ / 1000; }  // lateness of 0.5 ms or more, summed

 private:
  void Run() {
    constexpr auto kNap = std::chrono::milliseconds(1);
    while (!stop_) {
      Clock::time_point before = Clock::now();
      std::this_thread::sleep_for(kNap);
      double late_us =
          std::chrono::duration<double, std::micro>(Clock::now() - before - kNap).count();
      if (late_us >= 500) {
        total_us_ += late_us;
        at_least_1ms_ += late_us >= 1000;
        at_least_2ms_ += late_us >= 2000;
        longest_us_ = std::max(longest_us_, late_us);
      }
    }
  }

  std::atomic<bool> stop_{false};
  uint64_t at_least_1ms_ = 0;
  uint64_t at_least_2ms_ = 0;
  double longest_us_ = 0;
  double total_us_ = 0;
  std::thread thread_;  // last: it starts reading the members above at once
};

double Percentile(std::vector<double>& sorted, double p) {
  if (sorted.empty()) {
    return 0;
  }
  size_t i = std::min(sorted.size() - 1, static_cast<size_t>(p * (sorted.size() - 1) + 0.5));
  return sorted[i];
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  std::string url = absl::GetFlag(FLAGS_url);
  constexpr std::string_view kScheme = "http://";
  if (url.rfind(kScheme, 0) != 0) {
    std::fprintf(stderr, "relay-loadgen: --url must be http://HOST:PORT/PATH\n");
    return 2;
  }
  std::string rest = url.substr(kScheme.size());
  std::string authority = rest.substr(0, rest.find('/'));
  std::string target = rest.find('/') == std::string::npos ? "/" : rest.substr(rest.find('/'));
  std::vector<std::string> host_port = absl::StrSplit(authority, ':');
  int port = 80;
  if (host_port.size() != 2 || !absl::SimpleAtoi(host_port[1], &port)) {
    std::fprintf(stderr, "relay-loadgen: --url needs HOST:PORT\n");
    return 2;
  }
  const std::string body = absl::GetFlag(FLAGS_body);
  auto make_request = [&](absl::string_view headers) {
    std::string request = absl::StrCat(body.empty() ? "GET " : "POST ", target,
                                       " HTTP/1.1\r\nHost: ", authority, "\r\n");
    for (absl::string_view header : absl::StrSplit(headers, '|', absl::SkipWhitespace())) {
      absl::StrAppend(&request, header, "\r\n");
    }
    if (!body.empty()) {
      absl::StrAppend(&request, "Content-Type: application/json\r\nContent-Length: ", body.size(),
                      "\r\n");
    }
    absl::StrAppend(&request, "\r\n", body);
    return request;
  };
  std::vector<std::string> requests;
  if (absl::GetFlag(FLAGS_stdin_headers)) {
    for (std::string line; std::getline(std::cin, line);) {
      if (!line.empty()) {
        requests.push_back(make_request(absl::StrCat(absl::GetFlag(FLAGS_headers), "|", line)));
      }
    }
  }
  if (requests.empty()) {
    requests.push_back(make_request(absl::GetFlag(FLAGS_headers)));
  }
  const bool closed = absl::GetFlag(FLAGS_closed);

  asio::io_context io(1);
  asio::ip::tcp::endpoint endpoint(asio::ip::make_address(host_port[0]),
                                   static_cast<unsigned short>(port));
  Figures figures;
  figures.keep_calls = absl::GetFlag(FLAGS_calls);
  std::deque<Clock::time_point> due;  // scheduled, waiting for an idle connection
  // Taken in turn, oldest first: every connection is used every connections/rate seconds. Taken
  // newest first, those at the bottom sat unused until a stall deepened the queue, and by then a
  // server that closes a connection whose first request does not come in time (the gateway's
  // --header_timeout, 10 s) had closed them: their calls failed with "end of stream".
  std::deque<Connection*> idle;
  bool sending = false;  // closed loop: while the clock runs
  uint64_t issued = 0;
  auto on_idle = [&](Connection* c) {
    if (closed) {
      if (sending) {
        ++issued;
        c->Send(Clock::now());
      } else {
        idle.push_back(c);  // connected: it starts with the clock
      }
      return;
    }
    if (!due.empty()) {
      Clock::time_point next = due.front();
      due.pop_front();
      c->Send(next);
    } else {
      idle.push_back(c);
    }
  };
  std::vector<std::shared_ptr<Connection>> connections;
  for (int i = 0; i < absl::GetFlag(FLAGS_connections); ++i) {
    connections.push_back(std::make_shared<Connection>(
        io, endpoint, requests[static_cast<size_t>(i) % requests.size()], figures, on_idle));
    connections.back()->Start();
  }
  // Let the connections open before the clock starts.
  io.run_for(std::chrono::milliseconds(200));
  io.restart();  // it stopped when it ran out of work

  const double rate = absl::GetFlag(FLAGS_rate);
  const auto interval = std::chrono::duration<double>(1.0 / rate);
  const Clock::time_point start = Clock::now();
  // The wall clock at the start, so that --calls' due times line up with another process's.
  const auto start_wall = std::chrono::system_clock::now();
  figures.started = start;
  const uint64_t total =
      closed ? 0 : static_cast<uint64_t>(rate * absl::GetFlag(FLAGS_seconds));
  asio::steady_timer timer(io);
  std::function<void()> tick = [&] {
    Clock::time_point now = Clock::now();
    while (issued < total) {
      auto at = start + std::chrono::duration_cast<Clock::duration>(interval * issued);
      if (at > now) {
        break;
      }
      ++issued;
      if (!idle.empty()) {
        Connection* c = idle.front();
        idle.pop_front();
        c->Send(at);
      } else {
        due.push_back(at);
      }
    }
    if (issued < total) {
      timer.expires_at(start + std::chrono::duration_cast<Clock::duration>(interval * issued));
      timer.async_wait([&](beast::error_code) { tick(); });
    }
  };
  StallMeter stalls;
  if (closed) {
    sending = true;
    for (Connection* c : std::exchange(idle, {})) {
      ++issued;
      c->Send(start);
    }
  } else {
    tick();
  }
  // Send for the duration, then give the last answers up to 5 s.
  const auto end = start + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(absl::GetFlag(FLAGS_seconds)));
  io.run_until(end);
  sending = false;
  while (figures.latencies_us.size() + figures.errors < issued &&
         Clock::now() < end + std::chrono::seconds(5)) {
    io.restart();
    io.run_for(std::chrono::milliseconds(10));
  }
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  stalls.Stop();
  std::vector<double>& l = figures.latencies_us;
  std::sort(l.begin(), l.end());
  // Each connection's answers per second: the slowest, and the median.
  std::vector<double> per_connection;
  for (const auto& c : connections) {
    per_connection.push_back(static_cast<double>(c->answered()) / elapsed);
  }
  std::sort(per_connection.begin(), per_connection.end());
  std::printf(
      "{\"offered\":%.0f,\"sent\":%llu,\"completed\":%zu,\"errors\":%llu,\"non200\":%llu,"
      "\"achieved\":%.0f,\"p50_ms\":%.3f,\"p90_ms\":%.3f,\"p99_ms\":%.3f,\"p999_ms\":%.3f,"
      "\"max_ms\":%.3f,\"stalls_1ms\":%llu,\"stalls_2ms\":%llu,\"stall_max_ms\":%.3f,"
      "\"stall_total_ms\":%.1f,\"connection_min_rps\":%.2f,\"connection_median_rps\":%.2f,"
      "\"error_kinds\":{%s},\"error_times_s\":[%s]%s}\n",
      rate, static_cast<unsigned long long>(issued), l.size(),
      static_cast<unsigned long long>(figures.errors),
      static_cast<unsigned long long>(figures.non_200), l.size() / elapsed,
      Percentile(l, 0.5) / 1000, Percentile(l, 0.9) / 1000, Percentile(l, 0.99) / 1000,
      Percentile(l, 0.999) / 1000, l.empty() ? 0.0 : l.back() / 1000,
      static_cast<unsigned long long>(stalls.at_least_1ms()),
      static_cast<unsigned long long>(stalls.at_least_2ms()), stalls.longest_ms(),
      stalls.total_ms(), per_connection.front(), Percentile(per_connection, 0.5),
      ErrorKinds(figures).c_str(), ErrorTimes(figures).c_str(),
      CallsMember(figures, start_wall).c_str());
  return 0;
}
