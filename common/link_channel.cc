#include "common/link_channel.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <chrono>
#include <optional>
#include <thread>
#include <vector>
#include <utility>

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/link_frame.h"
#include "common/log.h"

namespace relay::common {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

// Connecting, or a client's handshake, may take this long.
constexpr auto kOpenTimeout = std::chrono::seconds(10);
// Links (and handshakes under way) a listener holds at once.
constexpr size_t kMaxLinks = 1024;

// A dead peer of a long-lived link is noticed within seconds, idle or not
// (the kernel probes an idle link; unacknowledged data gives up after 20 s).
void SetLinkOptions(tcp::socket& socket) {
  error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  socket.set_option(asio::socket_base::keep_alive(true), ignored);
  const int fd = socket.native_handle();
  const int idle = 10, interval = 5, count = 2, user_timeout_ms = 20000;
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
  ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof(user_timeout_ms));
}

std::string CommonName(SSL* ssl) {
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (cert == nullptr) {
    return "";
  }
  std::string name;
  X509_NAME* subject = X509_get_subject_name(cert);
  int index = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  if (index >= 0) {
    unsigned char* utf8 = nullptr;
    int length = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, index)));
    if (length > 0) {
      name.assign(reinterpret_cast<char*>(utf8), static_cast<size_t>(length));
    }
    OPENSSL_free(utf8);
  }
  X509_free(cert);
  return name;
}

absl::Status Unavailable(absl::string_view what, const error_code& ec) {
  return absl::UnavailableError(absl::StrCat(what, ": ", ec.message()));
}

}  // namespace

struct LinkTls::Context {
  explicit Context(ssl::context::method method) : ssl(method) {}
  ssl::context ssl;
};

LinkTls::LinkTls(std::unique_ptr<Context> context) : context_(std::move(context)) {}
LinkTls::~LinkTls() = default;

absl::StatusOr<std::shared_ptr<LinkTls>> LinkTls::Make(const GrpcTls& tls, Side side) {
  if (!tls.enabled()) {
    return nullptr;
  }
  const bool server = side == Side::kServer;
  auto context = std::make_unique<Context>(server ? ssl::context::tls_server : ssl::context::tls_client);
  ssl::context& ctx = context->ssl;
  error_code ec;
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                      ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1,
                  ec);
  if (!ec) ctx.use_certificate_chain(asio::buffer(tls.cert_pem), ec);
  if (!ec) ctx.use_private_key(asio::buffer(tls.key_pem), ssl::context::pem, ec);
  if (!ec) ctx.add_certificate_authority(asio::buffer(tls.ca_pem), ec);
  if (!ec) {
    ctx.set_verify_mode(ssl::verify_peer | (server ? ssl::verify_fail_if_no_peer_cert : 0), ec);
  }
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("the links' TLS cannot use --grpc_tls_ca, --grpc_tls_cert, --grpc_tls_key: ",
                     ec.message()));
  }
  // A server admits client certificates only, a client server certificates
  // only (make-certs.sh gives each its extended key usage).
  SSL_CTX_set_purpose(ctx.native_handle(), server ? X509_PURPOSE_SSL_CLIENT : X509_PURPOSE_SSL_SERVER);
  return std::shared_ptr<LinkTls>(new LinkTls(std::move(context)));
}

absl::StatusOr<std::pair<std::string, std::string>> SplitHostPort(absl::string_view address) {
  size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos || colon + 1 == address.size()) {
    return absl::InvalidArgumentError(absl::StrCat("\"", address, "\" is not host:port"));
  }
  absl::string_view host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return std::make_pair(std::string(host), std::string(address.substr(colon + 1)));
}

struct LinkChannel::Io {
  explicit Io(asio::io_context& io) : io(io), socket(io), timer(io), resolver(io) {}
  // Runs fn on whichever stream carries the link's bytes.
  template <typename Fn>
  void WithStream(Fn&& fn) {
    if (tls) {
      fn(*tls);
    } else {
      fn(socket);
    }
  }
  asio::io_context& io;
  tcp::socket socket;
  std::optional<ssl::stream<tcp::socket&>> tls;
  asio::steady_timer timer;  // the open deadline
  tcp::resolver resolver;
  LinkFrameReader reader;
  std::string host;  // client side: what the server's certificate must name
};

LinkChannel::LinkChannel(asio::io_context& io, std::shared_ptr<LinkTls> tls)
    : tls_(std::move(tls)), io_(std::make_unique<Io>(io)) {}

LinkChannel::~LinkChannel() = default;

std::string LinkChannel::peer() const {
  error_code ec;
  tcp::endpoint endpoint = io_->socket.remote_endpoint(ec);
  return ec ? std::string("unknown") : absl::StrCat(endpoint.address().to_string(), ":", endpoint.port());
}

void LinkChannel::Connect(const std::string& host, const std::string& port) {
  asio::dispatch(io_->io, [self = shared_from_this(), host, port] {
    if (self->closed_) {
      return;  // closed before it began
    }
    Io& io = *self->io_;
    io.host = host;
    io.timer.expires_after(kOpenTimeout);
    io.timer.async_wait([self](error_code ec) {
      if (!ec && !self->open_) {
        self->CloseNow(absl::DeadlineExceededError("connecting to the router took more than 10 s"));
      }
    });
    io.resolver.async_resolve(host, port, [self](error_code ec, tcp::resolver::results_type found) {
      if (self->closed_) {
        return;
      }
      if (ec) {
        return self->CloseNow(Unavailable("resolving the router's address", ec));
      }
      asio::async_connect(self->io_->socket, found, [self](error_code ec, const tcp::endpoint&) {
        if (self->closed_) {
          return;
        }
        if (ec) {
          return self->CloseNow(Unavailable("connecting to the router", ec));
        }
        self->Handshake(/*server=*/false);
      });
    });
  });
}

void LinkChannel::Adopt() {
  Io& io = *io_;
  io.timer.expires_after(kOpenTimeout);
  io.timer.async_wait([self = shared_from_this()](error_code ec) {
    if (!ec && !self->open_) {
      self->CloseNow(absl::DeadlineExceededError("the link's handshake took more than 10 s"));
    }
  });
  Handshake(/*server=*/true);
}

void LinkChannel::Handshake(bool server) {
  Io& io = *io_;
  SetLinkOptions(io.socket);
  if (!tls_) {
    return Opened();
  }
  io.tls.emplace(io.socket, tls_->context().ssl);
  if (!server) {
    io.tls->set_verify_callback(ssl::host_name_verification(io.host));
    error_code ignored;
    asio::ip::make_address(io.host, ignored);
    if (ignored) {  // a name, not an address: say which (SNI)
      SSL_set_tlsext_host_name(io.tls->native_handle(), io.host.c_str());
    }
  }
  io.tls->async_handshake(server ? ssl::stream_base::server : ssl::stream_base::client,
                          [self = shared_from_this()](error_code ec) {
                            if (self->closed_) {
                              return;
                            }
                            if (ec) {
                              return self->CloseNow(Unavailable("the link's TLS handshake", ec));
                            }
                            self->peer_role_ = CommonName(self->io_->tls->native_handle());
                            self->Opened();
                          });
}

void LinkChannel::Opened() {
  open_ = true;
  fd_.store(io_->socket.native_handle(), std::memory_order_release);
  io_->timer.cancel();
  if (absl::Status opened = OnOpened(); !opened.ok()) {
    return CloseNow(std::move(opened));
  }
  ReadMore();
  WriteRound();
}

void LinkChannel::ReadMore() {
  absl::Span<char> room = io_->reader.Prepare();
  io_->WithStream([&](auto& stream) {
    stream.async_read_some(asio::buffer(room.data(), room.size()),
                           [self = shared_from_this()](error_code ec, size_t bytes) {
                             if (self->closed_) {
                               return;
                             }
                             if (ec) {
                               return self->CloseNow(
                                   ec == asio::error::eof || ec == ssl::error::stream_truncated
                                       ? absl::UnavailableError("the peer closed the link")
                                       : Unavailable("reading the link", ec));
                             }
                             LinkFrameReader& reader = self->io_->reader;
                             reader.Commit(bytes);
                             for (;;) {
                               absl::string_view frame;
                               absl::StatusOr<bool> next = reader.Next(frame);
                               if (!next.ok()) {
                                 return self->CloseNow(next.status());
                               }
                               if (!*next) {
                                 break;
                               }
                               if (absl::Status taken = self->OnFrame(frame); !taken.ok()) {
                                 return self->CloseNow(std::move(taken));
                               }
                             }
                             self->ReadMore();
                           });
  });
}

void LinkChannel::Wake() {
  if (wake_posted_.exchange(true, std::memory_order_acq_rel)) {
    return;  // a round is due already
  }
  // Posted even from the channel's own thread: what else this turn makes
  // ready goes in the same write.
  asio::post(io_->io, [self = shared_from_this()] {
    self->wake_posted_.store(false, std::memory_order_release);
    self->WriteRound();
  });
}

void LinkChannel::WriteRound() {
  if (!open_ || closed_ || write_in_flight_) {
    return;
  }
  out_.clear();
  if (out_.capacity() > (4 << 20)) {
    out_.shrink_to_fit();  // a large batch has passed
  }
  // Set first: whoever sees the queue empty then sees the write too.
  writing_.store(true, std::memory_order_release);
  if (!FillWrite(out_)) {
    writing_.store(false, std::memory_order_release);
    return;
  }
  write_in_flight_ = true;
  io_->WithStream([&](auto& stream) {
    asio::async_write(stream, asio::buffer(out_), [self = shared_from_this()](error_code ec, size_t) {
      self->write_in_flight_ = false;
      self->writing_.store(false, std::memory_order_release);
      if (self->closed_) {
        return;
      }
      if (ec) {
        return self->CloseNow(Unavailable("writing the link", ec));
      }
      self->WriteRound();
    });
  });
}

bool LinkChannel::Delivered() const {
  const int fd = fd_.load(std::memory_order_acquire);
  int unacknowledged = 0;
  return fd < 0 || ::ioctl(fd, SIOCOUTQ, &unacknowledged) != 0 || unacknowledged == 0;
}

void LinkChannel::Close(absl::Status why) {
  asio::post(io_->io, [self = shared_from_this(), why = std::move(why)]() mutable {
    self->CloseNow(std::move(why));
  });
}

void LinkChannel::CloseNow(absl::Status why) {
  if (closed_) {
    return;
  }
  closed_ = true;
  fd_.store(-1, std::memory_order_release);
  Io& io = *io_;
  io.timer.cancel();
  io.resolver.cancel();
  error_code ignored;
  io.socket.shutdown(tcp::socket::shutdown_both, ignored);
  io.socket.close(ignored);
  OnClosed(why);
}

struct LinkListener::State {
  asio::io_context io{1};  // one thread runs it: no locking inside
  tcp::acceptor acceptor{io};
  asio::steady_timer backoff{io};
  std::shared_ptr<LinkTls> tls;
  Factory make;
  std::vector<std::weak_ptr<LinkChannel>> channels;  // accepted; the thread's alone
  std::thread thread;
};

LinkListener::LinkListener(std::unique_ptr<State> state) : state_(std::move(state)) {}

LinkListener::~LinkListener() { Stop(); }

asio::io_context& LinkListener::io() { return state_->io; }

absl::StatusOr<std::unique_ptr<LinkListener>> LinkListener::Start(const std::string& address,
                                                                  std::shared_ptr<LinkTls> tls,
                                                                  Factory make) {
  auto parts = SplitHostPort(address);
  if (!parts.ok()) {
    return parts.status();
  }
  auto state = std::make_unique<State>();
  state->tls = std::move(tls);
  state->make = std::move(make);
  error_code ec;
  asio::ip::address host = asio::ip::make_address(parts->first, ec);
  if (ec) {
    return absl::InvalidArgumentError(absl::StrCat("\"", address, "\": the host must be an IP address"));
  }
  int port = 0;
  if (!absl::SimpleAtoi(parts->second, &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("\"", address, "\": bad port"));
  }
  tcp::endpoint endpoint(host, static_cast<unsigned short>(port));
  tcp::acceptor& acceptor = state->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat("cannot listen for links on ", address, ": ", ec.message()));
  }
  std::unique_ptr<LinkListener> listener(new LinkListener(std::move(state)));
  listener->port_ = listener->state_->acceptor.local_endpoint().port();
  listener->Accept();
  listener->state_->thread = std::thread([s = listener->state_.get()] {
    auto guard = asio::make_work_guard(s->io);
    s->io.run();
  });
  return listener;
}

void LinkListener::Accept() {
  State& s = *state_;
  std::shared_ptr<LinkChannel> channel = s.make(s.io);
  s.acceptor.async_accept(channel->io_->socket, [this, channel](error_code ec) {
    if (ec == asio::error::operation_aborted || !state_->acceptor.is_open()) {
      return;
    }
    if (ec) {
      // Out of file descriptors, say: back off rather than spin.
      LogWarn("accepting a link failed; retrying in 100 ms", {{"error", ec.message()}});
      state_->backoff.expires_after(std::chrono::milliseconds(100));
      state_->backoff.async_wait([this](error_code ec) {
        if (!ec) {
          Accept();
        }
      });
      return;
    }
    std::vector<std::weak_ptr<LinkChannel>>& channels = state_->channels;
    std::erase_if(channels, [](const std::weak_ptr<LinkChannel>& c) { return c.expired(); });
    if (channels.size() >= kMaxLinks) {
      // Gateways are few; thousands of connections are someone else's.
      LogWarn("too many links open; closing a new one", {{"links", static_cast<int64_t>(channels.size())}});
      error_code ignored;
      channel->io_->socket.close(ignored);
      Accept();
      return;
    }
    channels.push_back(channel);
    channel->Adopt();
    Accept();
  });
}

void LinkListener::Stop() {
  if (!state_->thread.joinable()) {
    return;
  }
  // Every link is closed first, so that its owner lets go of it (OnClosed)
  // while the thread still runs.
  asio::post(state_->io, [s = state_.get()] {
    error_code ignored;
    s->acceptor.close(ignored);
    s->backoff.cancel();
    for (const std::weak_ptr<LinkChannel>& weak : s->channels) {
      if (std::shared_ptr<LinkChannel> channel = weak.lock()) {
        channel->CloseNow(absl::UnavailableError("the router is stopping"));
      }
    }
    s->io.stop();
  });
  state_->thread.join();
}

}  // namespace relay::common
