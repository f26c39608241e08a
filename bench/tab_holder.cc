// relay-tabholder: holds idle tab WebSockets for the bench, as bench/hold.mjs's `tab` kind does
// and with the same standard input and output, at a fraction of its CPU. In a gateway's restart
// the bench's Node processes spent 2.6 s of CPU on 9,500 handshakes, more than the relay's
// gateways and router together (0.7 s), on the same two cores: the figure was the load tool's.
// Browsers connect from machines of their own.
//   relay-tabholder --url http://127.0.0.1:PORT/mcp --batch 500 [--sources 8] [--resume=false]
//                   [--first_url http://127.0.0.1:GATEWAY/mcp]
// With --first_url the tabs connect there first and come back through --url: one gateway holds
// them all, and its restart sends them all through the load balancer.
// Standard input: one ticket per line, one tab each, then an empty line. Lines
// `first-ticket second-ticket` may follow at any time, and a tab that the relay closes (its
// gateway went away) connects again at once, as the editor's page does: with the resume
// credential the relay gave it (relay/resume), or with its second ticket with --resume=false. An
// empty line after them is answered `second tickets taken`. Prints
//   held N in MS ms, A attempts, F given up
// once every tab is open, and
//   reheld N in MS ms, A attempts, F given up (back after p50 …, p90 …; by second …; refusals: …)
// once every tab so closed is back (MS from the first close). A refusal says at which step it
// came (connect, handshake, hello, closed) and what the system said, so that a reset is told
// from a refusal. SIGTERM closes every tab and exits.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <netinet/in.h>
#include <sys/socket.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <nlohmann/json.hpp>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

ABSL_FLAG(std::string, url, "", "the gateway's (or the load balancer's) http://HOST:PORT/PATH");
ABSL_FLAG(std::string, first_url, "",
          "where the tabs connect first, if not --url (a gateway straight, to hold them all)");
ABSL_FLAG(int, batch, 0, "tabs opened at a time (0: all at once)");
ABSL_FLAG(int, sources, 8, "loopback source addresses to connect from (127.0.0.2 …)");
ABSL_FLAG(bool, resume, true, "a closed tab comes back with its resume credential, not a ticket");

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using Clock = std::chrono::steady_clock;
using tcp = asio::ip::tcp;

constexpr int kMostAttempts = 20;  // as hold.mjs: then the tab is given up

struct Target {
  std::string host;
  asio::ip::address address;
  uint16_t port = 0;
  std::string path;
};

bool ParseUrl(const std::string& url, Target& target) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) return false;
  const std::string rest = url.substr(scheme.size());
  const size_t slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  const size_t colon = authority.rfind(':');
  if (colon == std::string::npos) return false;
  target.host = authority.substr(0, colon);
  boost::system::error_code ec;
  target.address = asio::ip::make_address(target.host, ec);  // an address, not a name
  int port = 0;
  if (ec || !absl::SimpleAtoi(authority.substr(colon + 1), &port) || port <= 0 || port > 65535) {
    return false;
  }
  target.port = static_cast<uint16_t>(port);
  target.path = slash == std::string::npos ? "/" : rest.substr(slash);
  return true;
}

// One attempt at a tab: connect, handshake, hello, then read until the relay closes it. `opened`
// is called once, with "" when the hello was answered and otherwise with what went wrong;
// `closed` once, if it had opened and then ended.
class TabConnection : public std::enable_shared_from_this<TabConnection> {
 public:
  using Opened = std::function<void(const std::string& why, std::string resume)>;
  using Closed = std::function<void(std::string resume)>;

  TabConnection(asio::io_context& io, const Target& target, const asio::ip::address& source,
                std::string hello, Opened opened, Closed closed)
      : ws_(io), target_(target), source_(source), hello_(std::move(hello)),
        opened_(std::move(opened)), closed_(std::move(closed)) {}

  void Start() {
    beast::error_code ec;
    tcp::socket& socket = beast::get_lowest_layer(ws_).socket();
    socket.open(tcp::v4(), ec);
    // The port is picked at connect, knowing the destination: bound by address alone, each bind
    // would search the ports every other connection already holds.
    if (!ec) {
      const int on = 1;
      ::setsockopt(socket.native_handle(), IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &on, sizeof on);
      socket.bind(tcp::endpoint(source_, 0), ec);
    }
    if (ec) return Fail("connect", ec);
    beast::get_lowest_layer(ws_).expires_after(std::chrono::seconds(30));
    beast::get_lowest_layer(ws_).async_connect(
        tcp::endpoint(target_.address, target_.port),
        [self = shared_from_this()](beast::error_code ec) { self->OnConnect(ec); });
  }

  void Close() {
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().close(ignored);
  }

 private:
  void OnConnect(beast::error_code ec) {
    if (ec) return Fail("connect", ec);
    ws_.set_option(websocket::stream_base::decorator([](websocket::request_type& request) {
      request.set(beast::http::field::origin, "http://editor.test");
      request.set(beast::http::field::user_agent, "relay-tabholder");
    }));
    ws_.async_handshake(absl::StrCat(target_.host, ":", target_.port), target_.path,
                        [self = shared_from_this()](beast::error_code ec) {
                          self->OnHandshake(ec);
                        });
  }

  void OnHandshake(beast::error_code ec) {
    if (ec) return Fail("handshake", ec);
    beast::get_lowest_layer(ws_).expires_never();
    // A close the relay starts ends within 30 s even if its TCP side never does, so that the
    // tab is counted and comes back (Node's ws does the same).
    ws_.set_option(websocket::stream_base::timeout{std::chrono::seconds(30),
                                                   websocket::stream_base::none(), false});
    ws_.text(true);
    ws_.async_write(asio::buffer(hello_), [self = shared_from_this()](beast::error_code ec,
                                                                     size_t) {
      if (ec) self->Fail("hello", ec);
    });
    Read();
  }

  void Read() {
    ws_.async_read(buffer_, [self = shared_from_this()](beast::error_code ec, size_t) {
      self->OnRead(ec);
    });
  }

  void OnRead(beast::error_code ec) {
    if (ec) {
      if (!open_) {
        if (ec == websocket::error::closed) {
          return Report(absl::StrCat("closed ", ws_.reason().code, " before the hello's answer"));
        }
        return Fail("hello", ec);
      }
      Close();  // its descriptor freed now, whether or not the tab comes back
      if (closed_) std::exchange(closed_, nullptr)(resume_);
      return;
    }
    const nlohmann::json message =
        nlohmann::json::parse(beast::buffers_to_string(buffer_.data()), nullptr, false);
    buffer_.consume(buffer_.size());
    if (message.is_object()) {
      const auto method = message.find("method");
      const auto params = message.find("params");
      if (method != message.end() && *method == "relay/resume" && params != message.end() &&
          params->is_object() && params->contains("resume") && (*params)["resume"].is_string()) {
        resume_ = (*params)["resume"].get<std::string>();
      }
      if (!open_ && message.contains("id") && message["id"] == 1) {
        if (!message.contains("result")) {
          const auto error = message.find("error");
          const std::string why =
              error != message.end() && error->is_object() && error->contains("message") &&
                      (*error)["message"].is_string()
                  ? (*error)["message"].get<std::string>()
                  : "?";
          Close();
          return Report(absl::StrCat("hello: ", why));
        }
        open_ = true;
        Report("");
      }
    }
    Read();
  }

  void Fail(const char* step, beast::error_code ec) {
    Close();
    Report(absl::StrCat(step, ": ", ec.message()));
  }

  // The attempt's outcome, said once.
  void Report(const std::string& why) {
    if (opened_) std::exchange(opened_, nullptr)(why, resume_);
  }

  websocket::stream<beast::tcp_stream> ws_;
  beast::flat_buffer buffer_;
  const Target& target_;
  asio::ip::address source_;
  std::string hello_;
  Opened opened_;
  Closed closed_;
  std::string resume_;
  bool open_ = false;
};

// The tabs, their attempts and the figures hold.mjs prints.
class Holder {
 public:
  Holder(asio::io_context& io, Target first, Target again, int sources, bool use_resume)
      : io_(io), first_(std::move(first)), again_(std::move(again)),
        sources_(std::max(1, sources)), use_resume_(use_resume) {}

  void Hold(std::vector<std::string> tickets, int batch) {
    tabs_.resize(tickets.size());
    for (size_t i = 0; i < tickets.size(); ++i) tabs_[i].ticket = std::move(tickets[i]);
    batch_ = batch > 0 ? static_cast<size_t>(batch) : tabs_.size();
    started_ = Clock::now();
    NextBatch();
  }

  // A line of standard input after the tickets.
  void Line(const std::string& line) {
    if (line.empty()) {
      std::printf("second tickets taken\n");
      std::fflush(stdout);
      return;
    }
    const size_t space = line.find(' ');
    if (space == std::string::npos) return;
    second_[line.substr(0, space)] = line.substr(space + 1);
  }

  void CloseAll() {
    stopping_ = true;
    for (Tab& tab : tabs_) {
      if (tab.connection) tab.connection->Close();
    }
  }

 private:
  struct Tab {
    std::string ticket;                       // the first; second_ is keyed by it
    std::shared_ptr<TabConnection> connection;
  };
  struct Reheld {
    int closed = 0, back = 0, given_up = 0, attempts = 0;
    Clock::time_point first_close;
    std::vector<int64_t> ms;
  };

  void NextBatch() {
    const size_t end = std::min(tabs_.size(), next_ + batch_);
    pending_ = end - next_;
    if (pending_ == 0) return PrintHeld();
    for (; next_ < end; ++next_) {
      Tab& tab = tabs_[next_];
      Open(tab, first_, HelloWithTicket(tab.ticket), 1, [this](int tries) {
        if (tries == 0) ++given_up_;
        if (--pending_ == 0) NextBatch();
      });
    }
  }

  void PrintHeld() {
    std::printf("held %d in %lld ms, %d attempts, %d given up%s\n", held_, MsSince(started_),
                attempts_, given_up_,
                attempts_ > held_ ? absl::StrCat(" (last refusal: ", last_refusal_, ")").c_str()
                                  : "");
    std::fflush(stdout);
  }

  static std::string Hello(const char* key, const std::string& value) {
    return nlohmann::json{{"jsonrpc", "2.0"},
                          {"id", 1},
                          {"method", "relay/hello"},
                          {"params",
                           {{key, value}, {"client", {{"name", "bench-hold"}, {"version", "0"}}}}}}
        .dump();
  }
  static std::string HelloWithTicket(const std::string& ticket) { return Hello("ticket", ticket); }

  // One attempt, and on failure another after 0.2–1 s, up to kMostAttempts; done(tries), 0 if
  // given up.
  void Open(Tab& tab, const Target& target, std::string hello, int tries,
            std::function<void(int)> done) {
    ++attempts_;
    const asio::ip::address source =
        asio::ip::make_address_v4(0x7f000002u + static_cast<uint32_t>(source_count_++ % sources_));
    tab.connection = std::make_shared<TabConnection>(
        io_, target, source, hello,
        [this, &tab, &target, hello, tries, done](const std::string& why, std::string) {
          if (why.empty()) {
            ++held_;
            return done(tries);
          }
          last_refusal_ = why;
          ++refusals_[why];
          if (tries >= kMostAttempts || stopping_) return done(0);
          auto timer = std::make_shared<asio::steady_timer>(
              io_, std::chrono::milliseconds(std::uniform_int_distribution<int>(200, 1000)(rng_)));
          timer->async_wait([this, &tab, &target, hello, tries, done, timer](beast::error_code) {
            Open(tab, target, hello, tries + 1, done);
          });
        },
        [this, &tab](std::string resume) { Reconnect(tab, std::move(resume)); });
    tab.connection->Start();
  }

  // A tab the relay closed, connecting again with its credential or its second ticket.
  void Reconnect(Tab& tab, std::string resume) {
    --held_;
    auto second = second_.find(tab.ticket);
    if (stopping_ || second == second_.end()) return;
    std::string hello = use_resume_ && !resume.empty() ? Hello("resume", resume)
                                                       : HelloWithTicket(second->second);
    second_.erase(second);
    if (re_.closed++ == 0) {
      re_.first_close = Clock::now();
      refusals_.clear();
    }
    Open(tab, again_, std::move(hello), 1, [this](int tries) {
      re_.attempts += tries > 0 ? tries : kMostAttempts;
      re_.ms.push_back(MsSince(re_.first_close));
      if (tries > 0) ++re_.back; else ++re_.given_up;
      if (re_.back + re_.given_up == re_.closed) PrintReheld();
    });
  }

  void PrintReheld() {
    std::vector<int64_t> ms = re_.ms;
    std::sort(ms.begin(), ms.end());
    auto at = [&](double q) {
      return ms[std::min(ms.size() - 1, static_cast<size_t>(q * static_cast<double>(ms.size())))];
    };
    std::map<int64_t, int> by_second;
    for (int64_t t : ms) ++by_second[t / 1000];
    std::string seconds;
    for (const auto& [s, n] : by_second) absl::StrAppend(&seconds, seconds.empty() ? "" : " ", s, "s:", n);
    std::vector<std::pair<std::string, int>> why(refusals_.begin(), refusals_.end());
    std::sort(why.begin(), why.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string refusals;
    for (size_t i = 0; i < std::min<size_t>(3, why.size()); ++i) {
      absl::StrAppend(&refusals, i ? "; " : "", why[i].first, " ×", why[i].second);
    }
    std::printf("reheld %d in %lld ms, %d attempts, %d given up (back after p50 %lld ms, p90 %lld "
                "ms; by second %s%s%s)\n",
                re_.back, MsSince(re_.first_close), re_.attempts, re_.given_up,
                static_cast<long long>(at(0.5)), static_cast<long long>(at(0.9)), seconds.c_str(),
                refusals.empty() ? "" : "; refusals: ", refusals.c_str());
    std::fflush(stdout);
  }

  static long long MsSince(Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
  }

  asio::io_context& io_;
  const Target first_;  // where the tabs connect first
  const Target again_;  // and where they come back
  const int sources_;
  const bool use_resume_;
  std::vector<Tab> tabs_;  // never resized once held: attempts refer to their tab
  std::map<std::string, std::string> second_;  // first ticket → second
  std::map<std::string, int> refusals_;        // what went wrong → how often
  std::string last_refusal_;
  std::mt19937 rng_{std::random_device{}()};
  size_t batch_ = 0, next_ = 0, pending_ = 0;
  uint64_t source_count_ = 0;
  int held_ = 0, attempts_ = 0, given_up_ = 0;
  bool stopping_ = false;
  Reheld re_;
  Clock::time_point started_;
};

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  Target again, first;
  const std::string first_url = absl::GetFlag(FLAGS_first_url);
  if (!ParseUrl(absl::GetFlag(FLAGS_url), again) ||
      !ParseUrl(first_url.empty() ? absl::GetFlag(FLAGS_url) : first_url, first)) {
    std::fprintf(stderr, "relay-tabholder: --url and --first_url must be http://ADDRESS:PORT/PATH\n");
    return 2;
  }
  std::vector<std::string> tickets;
  for (std::string line; std::getline(std::cin, line) && !line.empty();) {
    tickets.push_back(std::move(line));
  }
  asio::io_context io(1);
  Holder holder(io, first, again, absl::GetFlag(FLAGS_sources), absl::GetFlag(FLAGS_resume));
  asio::signal_set signals(io, SIGTERM, SIGINT);
  signals.async_wait([&](beast::error_code, int) {
    holder.CloseAll();
    io.stop();
  });
  holder.Hold(std::move(tickets), absl::GetFlag(FLAGS_batch));
  // The lines after the tickets, handed to the I/O thread as they come. Detached: it blocks in
  // a read of standard input until the process ends.
  std::thread([&io, &holder] {
    for (std::string line; std::getline(std::cin, line);) {
      asio::post(io, [&holder, line] { holder.Line(line); });
    }
  }).detach();
  io.run();
  // Not through exit(): the reader of standard input may still be blocked, holding io.
  std::fflush(stdout);
  std::_Exit(0);
}
