#include "common/link_channel.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>
#include <utility>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>

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

// Connecting, the handshake and the peer's first frame (the router's
// "admitted", the gateway's hello) may take this long together.
constexpr auto kOpenTimeout = std::chrono::seconds(10);
// Links a listener holds open at once.
constexpr size_t kMaxLinks = 1024;
// Handshakes under way at once, apart from the links: a new one past this
// drops the oldest, so that connections that never finish cannot keep a
// gateway out (anyone who reaches the port may open them; a gateway's own
// handshake takes milliseconds).
constexpr size_t kMaxHandshakes = 64;

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
  // One recv takes every record there is, not a header and then a body each.
  SSL_CTX_set_read_ahead(ctx.native_handle(), 1);
  // Both ends are ours: TLS 1.3 only (no renegotiation to reckon with). A peer
  // that closes without close_notify (ours never send one) has closed.
  SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_3_VERSION);
  SSL_CTX_set_options(ctx.native_handle(), SSL_OP_IGNORE_UNEXPECTED_EOF);
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

// OpenSSL runs straight on the non-blocking socket (no memory BIOs, no
// composed operations): a read takes every record there is, a write goes out
// inline from its handler, and Asio is only asked to wait for the socket to be
// readable or writable again. (Through asio::ssl::stream each record cost two
// handler hops and a read that found nothing; the links spent more on that
// than on everything else they do.)
struct LinkChannel::Io {
  explicit Io(asio::io_context& io) : io(io), socket(io), timer(io), beat(io), resolver(io) {}
  ~Io() {
    if (ssl != nullptr) {
      SSL_free(ssl);
    }
  }
  asio::io_context& io;
  tcp::socket socket;
  SSL* ssl = nullptr;  // under TLS, once the handshake starts
  asio::steady_timer timer;  // the open deadline
  asio::steady_timer beat;   // liveness: a ping, and a look at the peer, every kPingEvery
  tcp::resolver resolver;
  LinkFrameReader reader;
  std::string host;  // client side: what the server's certificate must name
  std::string out;      // what is being written
  size_t written = 0;   // of out
  bool write_waiting = false;  // for the socket to take more
  // Liveness (kPingEvery, kSilence): when the peer last sent us bytes, and
  // when our writes last made headway.
  std::chrono::steady_clock::time_point heard;
  std::chrono::steady_clock::time_point wrote;
  bool ping_due = false;
  bool pong_due = false;
  bool read_parked = false;  // reading paused (ReadPaused) until ResumeReading
  int unacknowledged = -1;   // SIOCOUTQ at the last beat while a write waited
};

namespace {

// What OpenSSL said went wrong, for a log line (no secret is in it).
std::string SslError(SSL* ssl) {
  const int saved_errno = errno;
  std::string said;
  if (long verify = SSL_get_verify_result(ssl); verify != X509_V_OK) {
    said = absl::StrCat("certificate: ", X509_verify_cert_error_string(verify));
  } else if (unsigned long code = ERR_get_error(); code != 0) {
    char text[256];
    ERR_error_string_n(code, text, sizeof(text));
    said = text;
  } else {
    said = saved_errno != 0 ? std::string(std::strerror(saved_errno)) : "the peer closed the connection";
  }
  ERR_clear_error();
  return said;
}

// One read or write through OpenSSL or the plain socket.
enum class IoResult { kDone, kWantRead, kWantWrite, kClosed, kError };

IoResult Classify(SSL* ssl, int result) {
  switch (SSL_get_error(ssl, result)) {
    case SSL_ERROR_WANT_READ:
      return IoResult::kWantRead;
    case SSL_ERROR_WANT_WRITE:
      return IoResult::kWantWrite;
    case SSL_ERROR_ZERO_RETURN:
      return IoResult::kClosed;
    case SSL_ERROR_SYSCALL:
      return ERR_peek_error() == 0 && (errno == 0 || errno == ECONNRESET || errno == EPIPE)
                 ? IoResult::kClosed
                 : IoResult::kError;
    default:
      return IoResult::kError;
  }
}

IoResult Plain(ssize_t result) {
  if (result > 0) {
    return IoResult::kDone;
  }
  if (result == 0) {
    return IoResult::kClosed;
  }
  if (errno == EAGAIN || errno == EWOULDBLOCK) {
    return IoResult::kWantRead;  // the caller knows which way it was going
  }
  return errno == ECONNRESET || errno == EPIPE ? IoResult::kClosed : IoResult::kError;
}

// A read takes this much before letting the thread's other work run.
constexpr size_t kReadTurnBytes = 1 << 20;

// A hung peer (a stopped process whose kernel still acknowledges, a machine
// gone without a reset) is declared down within kSilence + kPingEvery: each
// side pings every kPingEvery, the peer's link answers after the frames
// before it, and a peer that sent nothing for kSilence, or took none of our
// bytes for kSilence while we had some to write, is down
// (docs/operations.md, "Links under faults").
constexpr auto kPingEvery = std::chrono::seconds(1);
constexpr auto kSilence = std::chrono::seconds(3);

}  // namespace

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
      if (!ec && !self->framed_) {
        self->CloseNow(absl::DeadlineExceededError(
            self->open_ ? "the router did not admit the link within 10 s"
                        : "connecting to the router took more than 10 s"));
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
    if (!ec && !self->framed_) {
      self->CloseNow(absl::DeadlineExceededError(
          self->open_ ? "the gateway sent no hello within 10 s"
                      : "the link's handshake took more than 10 s"));
    }
  });
  Handshake(/*server=*/true);
}

void LinkChannel::Handshake(bool server) {
  Io& io = *io_;
  SetLinkOptions(io.socket);
  error_code ec;
  io.socket.non_blocking(true, ec);
  if (ec) {
    return CloseNow(Unavailable("the link's socket", ec));
  }
  if (!tls_) {
    return Opened();
  }
  io.ssl = SSL_new(tls_->context().ssl.native_handle());
  if (io.ssl == nullptr || SSL_set_fd(io.ssl, io.socket.native_handle()) != 1) {
    return CloseNow(absl::InternalError("the link's TLS could not start"));
  }
  SSL_set_mode(io.ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (server) {
    SSL_set_accept_state(io.ssl);
  } else {
    SSL_set_connect_state(io.ssl);
    // The server's certificate must name the host dialled.
    asio::ip::make_address(io.host, ec);
    const bool named =
        ec ? SSL_set_tlsext_host_name(io.ssl, io.host.c_str()) == 1 &&  // a name: say which (SNI)
                 SSL_set1_host(io.ssl, io.host.c_str()) == 1
           : X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(io.ssl), io.host.c_str()) == 1;
    if (!named) {
      // Never fail open: without the host to check, any server certificate would pass.
      return CloseNow(absl::InvalidArgumentError(
          absl::StrCat("the router's host \"", io.host, "\" cannot be checked against its certificate")));
    }
  }
  ContinueHandshake();
}

void LinkChannel::ContinueHandshake() {
  Io& io = *io_;
  ERR_clear_error();
  errno = 0;
  int result = SSL_do_handshake(io.ssl);
  if (result == 1) {
    peer_role_ = CommonName(io.ssl);
    return Opened();
  }
  IoResult what = Classify(io.ssl, result);
  if (what != IoResult::kWantRead && what != IoResult::kWantWrite) {
    return CloseNow(absl::UnavailableError(absl::StrCat("the link's TLS handshake: ", SslError(io.ssl))));
  }
  WaitThen(what == IoResult::kWantRead, "the link's TLS handshake", &LinkChannel::ContinueHandshake);
}

void LinkChannel::WaitThen(bool readable, const char* doing, void (LinkChannel::*next)()) {
  io_->socket.async_wait(readable ? tcp::socket::wait_read : tcp::socket::wait_write,
                         [self = shared_from_this(), doing, next](error_code ec) {
                           if (self->closed_) {
                             return;
                           }
                           if (ec) {
                             return self->CloseNow(Unavailable(doing, ec));
                           }
                           ((*self).*next)();
                         });
}

void LinkChannel::Opened() {
  open_ = true;
  fd_.store(io_->socket.native_handle(), std::memory_order_release);
  io_->heard = io_->wrote = std::chrono::steady_clock::now();
  if (absl::Status opened = OnOpened(); !opened.ok()) {
    return CloseNow(std::move(opened));
  }
  Beat();
  WriteRound();
  if (!closed_) {
    // A read first, not a wait: the handshake's last read may have taken the
    // peer's first frames too (read-ahead), and they would wait in OpenSSL.
    ReadReady();
  }
}

void LinkChannel::ReadMore() { WaitThen(/*readable=*/true, "reading the link", &LinkChannel::ReadReady); }

void LinkChannel::Beat() {
  io_->beat.expires_after(kPingEvery);
  io_->beat.async_wait([self = shared_from_this()](error_code ec) {
    if (ec || self->closed_) {
      return;
    }
    Io& io = *self->io_;
    const auto now = std::chrono::steady_clock::now();
    // While reading is paused the peer's pongs wait unread: its silence then
    // says nothing about it (its taking our bytes still does).
    if (!io.read_parked && now - io.heard > kSilence) {
      return self->CloseNow(absl::DeadlineExceededError(
          "the peer sent nothing for 3 s, not even a pong: it is down or hung"));
    }
    if (io.write_waiting) {
      // The socket says when it has room again only once a good part of its
      // buffer has gone: a slow reader takes bytes long before that. What the
      // kernel still holds unacknowledged going down is headway too.
      int unacknowledged = 0;
      if (::ioctl(io.socket.native_handle(), SIOCOUTQ, &unacknowledged) == 0 &&
          unacknowledged != io.unacknowledged) {
        io.unacknowledged = unacknowledged;
        io.wrote = now;
      }
      if (now - io.wrote > kSilence && self->EndsOnWriteStall()) {
        return self->CloseNow(absl::DeadlineExceededError(
            "the peer took none of the link's bytes for 3 s: it is hung or not reading"));
      }
    }
    io.ping_due = true;
    self->WriteRound();
    if (!self->closed_) {
      self->Beat();
    }
  });
}

void LinkChannel::ResumeReading() {
  asio::post(io_->io, [self = shared_from_this()] {
    Io& io = *self->io_;
    if (self->closed_ || !io.read_parked) {
      return;
    }
    io.read_parked = false;
    // Its silence is timed from now: nothing was read from it meanwhile.
    io.heard = std::chrono::steady_clock::now();
    self->ReadReady();
  });
}

void LinkChannel::ReadReady() {
  Io& io = *io_;
  size_t taken = 0;
  // Every record there is, until the socket has no more: a wait begun while
  // OpenSSL holds records it has read ahead would never end.
  for (;;) {
    if (framed_ && ReadPaused()) {
      // Backpressure: what the peer sends waits in the kernel (and then in
      // the peer's queue) until ResumeReading. (Not before the peer's first
      // frame: a gateway's hello is read, and its link admitted, even then.)
      io.read_parked = true;
      return;
    }
    absl::Span<char> room = io.reader.Prepare();
    IoResult what;
    size_t got = 0;
    errno = 0;
    if (io.ssl != nullptr) {
      ERR_clear_error();
      int result = SSL_read(io.ssl, room.data(), static_cast<int>(std::min<size_t>(room.size(), 1 << 30)));
      what = result > 0 ? IoResult::kDone : Classify(io.ssl, result);
      got = result > 0 ? static_cast<size_t>(result) : 0;
    } else {
      ssize_t result = ::recv(io.socket.native_handle(), room.data(), room.size(), 0);
      what = Plain(result);
      got = result > 0 ? static_cast<size_t>(result) : 0;
    }
    if (what == IoResult::kWantRead) {
      return ReadMore();
    }
    if (what == IoResult::kWantWrite) {
      // TLS wants to send before it reads on (a key update): once it can.
      return WaitThen(/*readable=*/false, "reading the link", &LinkChannel::ReadReady);
    }
    if (what == IoResult::kClosed) {
      return CloseNow(absl::UnavailableError("the peer closed the link"));
    }
    if (what == IoResult::kError) {
      return CloseNow(absl::UnavailableError(absl::StrCat(
          "reading the link: ", io.ssl != nullptr ? SslError(io.ssl) : std::strerror(errno))));
    }
    io.reader.Commit(got);
    io.heard = std::chrono::steady_clock::now();
    for (;;) {
      absl::string_view frame;
      LinkControl control;
      absl::StatusOr<bool> next = io.reader.Next(frame, &control);
      if (!next.ok()) {
        return CloseNow(next.status());
      }
      if (!*next) {
        break;
      }
      if (control == LinkControl::kPing) {
        // Answered after what came before it, in the next write round.
        if (!io.pong_due) {
          io.pong_due = true;
          Wake();
        }
        continue;
      }
      if (control == LinkControl::kPong) {
        continue;  // heard: that is all a pong is for
      }
      if (!framed_) {
        framed_ = true;
        io.timer.cancel();  // open, and the peer has spoken: the open deadline is met
      }
      if (absl::Status taken_ok = OnFrame(frame); !taken_ok.ok()) {
        return CloseNow(std::move(taken_ok));
      }
    }
    taken += got;
    if (taken >= kReadTurnBytes) {
      // The rest after the thread's other work (not a wait: the bytes are there).
      asio::post(io.io, [self = shared_from_this()] {
        if (!self->closed_) {
          self->ReadReady();
        }
      });
      return;
    }
  }
}

void LinkChannel::Wake() {
  if (wake_posted_.exchange(true, std::memory_order_acq_rel)) {
    return;  // a round is due already
  }
  // Posted even from the channel's own thread: what else this turn makes
  // ready goes in the same write.
  asio::post(io_->io, [self = shared_from_this()] {
    // Once more to the back of the queue: completions that were posted
    // behind this one (the next message of a peer whose bytes were already
    // read) get to add to the write first.
    asio::post(self->io_->io, [self] {
      self->wake_posted_.store(false, std::memory_order_release);
      self->WriteRound();
    });
  });
}

void LinkChannel::WriteReady() {
  io_->write_waiting = false;
  WriteRound();
}

void LinkChannel::WriteRound() {
  Io& io = *io_;
  if (!open_ || closed_ || io.write_waiting) {
    return;
  }
  for (;;) {
    if (io.written == io.out.size()) {
      io.out.clear();
      io.written = 0;
      if (io.out.capacity() > (4 << 20)) {
        io.out.shrink_to_fit();  // a large batch has passed
      }
      // Set first: whoever sees the queue empty then sees the write too.
      writing_.store(true, std::memory_order_release);
      if (io.pong_due) {
        AppendLinkControl(LinkControl::kPong, io.out);
        io.pong_due = false;
      }
      if (io.ping_due) {
        AppendLinkControl(LinkControl::kPing, io.out);
        io.ping_due = false;
      }
      FillWrite(io.out);
      if (io.out.empty()) {
        writing_.store(false, std::memory_order_release);
        return;
      }
      io.wrote = std::chrono::steady_clock::now();
    }
    // Written inline: the socket takes it at once unless its buffer is full.
    const char* data = io.out.data() + io.written;
    const size_t left = io.out.size() - io.written;
    IoResult what;
    size_t sent = 0;
    errno = 0;
    if (io.ssl != nullptr) {
      ERR_clear_error();
      int result = SSL_write(io.ssl, data, static_cast<int>(std::min<size_t>(left, 1 << 30)));
      what = result > 0 ? IoResult::kDone : Classify(io.ssl, result);
      sent = result > 0 ? static_cast<size_t>(result) : 0;
    } else {
      ssize_t result = ::send(io.socket.native_handle(), data, left, MSG_NOSIGNAL);
      what = Plain(result);
      if (what == IoResult::kWantRead) {
        what = IoResult::kWantWrite;  // EAGAIN, going out
      }
      sent = result > 0 ? static_cast<size_t>(result) : 0;
    }
    if (what == IoResult::kDone) {
      io.written += sent;
      io.wrote = std::chrono::steady_clock::now();
      continue;
    }
    if (what == IoResult::kWantRead || what == IoResult::kWantWrite) {
      io.write_waiting = true;
      io.unacknowledged = -1;
      return WaitThen(what == IoResult::kWantRead, "writing the link", &LinkChannel::WriteReady);
    }
    return CloseNow(absl::UnavailableError(
        what == IoResult::kClosed ? std::string("the peer closed the link")
                                  : absl::StrCat("writing the link: ",
                                                 io.ssl != nullptr ? SslError(io.ssl)
                                                                   : std::strerror(errno))));
  }
}

bool LinkChannel::Delivered() const {
  // Races a close on the channel's thread: the number may already be another
  // socket's, and this one answer wrong. Callers check the channel is still
  // open and ask again within milliseconds, so one wrong answer costs nothing.
  const int fd = fd_.load(std::memory_order_acquire);
  int unacknowledged = 0;
  return fd < 0 || ::ioctl(fd, SIOCOUTQ, &unacknowledged) != 0 || unacknowledged == 0;
}

void LinkChannel::Close(absl::Status why) {
  // Two turns, like Wake's: a write round woken before the close still
  // goes out before it.
  asio::post(io_->io, [self = shared_from_this(), why = std::move(why)]() mutable {
    asio::post(self->io_->io, [self, why = std::move(why)]() mutable {
      self->CloseNow(std::move(why));
    });
  });
}

void LinkChannel::CloseNow(absl::Status why) {
  if (closed_) {
    return;
  }
  closed_ = true;
  writing_.store(false, std::memory_order_release);
  fd_.store(-1, std::memory_order_release);
  Io& io = *io_;
  io.timer.cancel();
  io.beat.cancel();
  io.resolver.cancel();
  error_code ignored;
  io.socket.shutdown(tcp::socket::shutdown_both, ignored);
  io.socket.close(ignored);
  if (io.ssl != nullptr) {
    // Gone with its socket: the descriptor's number may soon be another's.
    SSL_free(io.ssl);
    io.ssl = nullptr;
  }
  OnClosed(why);
}

struct LinkListener::State {
  asio::io_context io{1};  // one thread runs it: no locking inside
  tcp::acceptor acceptor{io};
  asio::steady_timer backoff{io};
  std::shared_ptr<LinkTls> tls;
  Factory make;
  std::vector<std::weak_ptr<LinkChannel>> channels;  // accepted, oldest first; the thread's alone
  // A flood of connections is told of once a second, not once each.
  std::chrono::steady_clock::time_point last_warning;
  int64_t unwarned = 0;
  std::thread thread;

  void Warn(absl::string_view what, int64_t links) {
    ++unwarned;
    auto now = std::chrono::steady_clock::now();
    if (now - last_warning < std::chrono::seconds(1)) {
      return;
    }
    LogWarn(what, {{"links", links}, {"connections", unwarned}});
    last_warning = now;
    unwarned = 0;
  }
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
    size_t open = 0;
    std::vector<std::shared_ptr<LinkChannel>> opening;  // oldest first
    for (const std::weak_ptr<LinkChannel>& weak : channels) {
      if (std::shared_ptr<LinkChannel> c = weak.lock(); c && !c->closed_) {
        if (c->open_) {
          ++open;
        } else {
          opening.push_back(std::move(c));
        }
      }
    }
    if (open >= kMaxLinks) {
      // Gateways are few; thousands of links are someone else's.
      state_->Warn("too many links open; closing new connections", static_cast<int64_t>(open));
      error_code ignored;
      channel->io_->socket.close(ignored);
      Accept();
      return;
    }
    if (opening.size() >= kMaxHandshakes) {
      state_->Warn("too many link handshakes under way; dropping the oldest",
                   static_cast<int64_t>(open));
      opening.front()->CloseNow(
          absl::ResourceExhaustedError("the handshake was dropped for newer ones"));
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
