#include "common/link/link_channel.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <chrono>
#include <utility>

#include <boost/asio/connect.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include "absl/strings/str_cat.h"
#include "common/link/link_channel_io.h"

namespace relay::common {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

// Connecting, the handshake and the peer's first frame (the router's
// "admitted", the gateway's hello) may take this long together.
constexpr auto kOpenTimeout = std::chrono::seconds(10);
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

absl::Status Unavailable(absl::string_view what, const error_code& ec) {
  return absl::UnavailableError(absl::StrCat(what, ": ", ec.message()));
}

// A step that neither made headway nor waits: why the link ends.
absl::Status Ended(absl::string_view doing, const LinkStep& step, bool open) {
  if (step.io != LinkIo::kClosed) {
    return absl::UnavailableError(absl::StrCat(doing, ": ", step.error));
  }
  return absl::UnavailableError(open ? std::string("the peer closed the link")
                                     : absl::StrCat(doing, ": the peer closed the connection"));
}

}  // namespace

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

LinkChannel::LinkChannel(asio::io_context& io, std::shared_ptr<LinkTls> tls)
    : tls_(std::move(tls)), io_(std::make_unique<Io>(io)) {}

LinkChannel::~LinkChannel() = default;

const std::string& LinkChannel::peer_role() const { return io_->stream.peer_role(); }

std::string LinkChannel::peer() const {
  error_code ec;
  tcp::endpoint endpoint = io_->socket.remote_endpoint(ec);
  return ec ? std::string("unknown") : absl::StrCat(endpoint.address().to_string(), ":", endpoint.port());
}

void LinkChannel::Connect(const std::string& host, const std::string& port) {
  asio::dispatch(io_->io, [self = shared_from_this(), host, port] {
    if (self->closed()) {
      return;  // closed before it began
    }
    Io& io = *self->io_;
    io.host = host;
    self->ArmOpenDeadline("connecting to the router took more than 10 s",
                          "the router did not admit the link within 10 s");
    io.resolver.async_resolve(host, port, [self](error_code ec, tcp::resolver::results_type found) {
      if (self->closed()) {
        return;
      }
      if (ec) {
        return self->CloseNow(Unavailable("resolving the router's address", ec));
      }
      asio::async_connect(self->io_->socket, found, [self](error_code ec, const tcp::endpoint&) {
        if (self->closed()) {
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
  ArmOpenDeadline("the link's handshake took more than 10 s", "the gateway sent no hello within 10 s");
  Handshake(/*server=*/true);
}

void LinkChannel::ArmOpenDeadline(const char* if_connecting, const char* if_opening) {
  io_->timer.expires_after(kOpenTimeout);
  io_->timer.async_wait([self = shared_from_this(), if_connecting, if_opening](error_code ec) {
    // Cancelled once the peer has spoken (kOpen), and moot once closed.
    if (!ec && (self->state_ == State::kConnecting || self->state_ == State::kOpening)) {
      self->CloseNow(absl::DeadlineExceededError(
          self->state_ == State::kOpening ? if_opening : if_connecting));
    }
  });
}

void LinkChannel::Handshake(bool server) {
  Io& io = *io_;
  SetLinkOptions(io.socket);
  error_code ec;
  io.socket.non_blocking(true, ec);
  if (ec) {
    return CloseNow(Unavailable("the link's socket", ec));
  }
  io.stream.Attach(io.socket.native_handle());
  if (tls_) {
    if ((tls_->side() == LinkTls::Side::kServer) != server) {
      return CloseNow(absl::InternalError("the link's TLS is for the other side"));
    }
    absl::Status started = io.stream.StartTls(tls_->context(), server, io.host);
    if (!started.ok()) {
      return CloseNow(std::move(started));
    }
  }
  ContinueHandshake();
}

void LinkChannel::ContinueHandshake() {
  LinkStep step = io_->stream.Handshake();
  switch (step.io) {
    case LinkIo::kDone:
      return Opened();
    case LinkIo::kWantRead:
    case LinkIo::kWantWrite:
      return WaitThen(step.io == LinkIo::kWantRead, "the link's TLS handshake",
                      &LinkChannel::ContinueHandshake);
    default:
      return CloseNow(Ended("the link's TLS handshake", step, /*open=*/false));
  }
}

void LinkChannel::WaitThen(bool readable, const char* doing, void (LinkChannel::*next)()) {
  io_->socket.async_wait(readable ? tcp::socket::wait_read : tcp::socket::wait_write,
                         [self = shared_from_this(), doing, next](error_code ec) {
                           if (self->closed()) {
                             return;
                           }
                           if (ec) {
                             return self->CloseNow(Unavailable(doing, ec));
                           }
                           ((*self).*next)();
                         });
}

void LinkChannel::Opened() {
  state_ = State::kOpening;
  fd_.store(io_->socket.native_handle(), std::memory_order_release);
  io_->heard = io_->wrote = std::chrono::steady_clock::now();
  if (absl::Status opened = OnOpened(); !opened.ok()) {
    return CloseNow(std::move(opened));
  }
  Beat();
  WriteRound();
  if (!closed()) {
    // A read first, not a wait: the handshake's last read may have taken the
    // peer's first frames too (read-ahead), and they would wait in OpenSSL.
    ReadReady();
  }
}

void LinkChannel::Beat() {
  io_->beat.expires_after(kPingEvery);
  io_->beat.async_wait([self = shared_from_this()](error_code ec) {
    if (ec || self->closed()) {
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
    if (!self->closed()) {
      self->Beat();
    }
  });
}

void LinkChannel::ResumeReading() {
  asio::post(io_->io, [self = shared_from_this()] {
    Io& io = *self->io_;
    if (self->closed() || !io.read_parked) {
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
  // Every record there is, until the socket has no more (a read finds it
  // empty, or says it took the last of it): a wait begun while OpenSSL holds
  // records it has read ahead would never end.
  for (;;) {
    if (state_ == State::kOpen && ReadPaused()) {
      // Backpressure: what the peer sends waits in the kernel (and then in
      // the peer's queue) until ResumeReading. (Not before the peer's first
      // frame: a gateway's hello is read, and its link admitted, even then.)
      io.read_parked = true;
      return;
    }
    LinkStep step = io.stream.Read(io.reader.Prepare());
    switch (step.io) {
      case LinkIo::kDone:
        break;
      case LinkIo::kWantRead:
        return WaitThen(/*readable=*/true, "reading the link", &LinkChannel::ReadReady);
      case LinkIo::kWantWrite:
        // TLS wants to send before it reads on (a key update): once it can.
        return WaitThen(/*readable=*/false, "reading the link", &LinkChannel::ReadReady);
      default:
        return CloseNow(Ended("reading the link", step, /*open=*/true));
    }
    io.reader.Commit(step.bytes);
    io.heard = std::chrono::steady_clock::now();
    const bool drained = io.stream.drained();
    if (!TakeFrames()) {
      return;
    }
    if (drained) {
      // Nothing left in the socket or in TLS: wait, without the read that
      // would find it empty (what arrives meanwhile ends the wait at once).
      return WaitThen(/*readable=*/true, "reading the link", &LinkChannel::ReadReady);
    }
    taken += step.bytes;
    if (taken >= kReadTurnBytes) {
      // The rest after the thread's other work (not a wait: the bytes are there).
      asio::post(io.io, [self = shared_from_this()] {
        if (!self->closed()) {
          self->ReadReady();
        }
      });
      return;
    }
  }
}

bool LinkChannel::TakeFrames() {
  Io& io = *io_;
  for (;;) {
    absl::string_view frame;
    LinkControl control;
    absl::StatusOr<bool> next = io.reader.Next(frame, &control);
    if (!next.ok()) {
      CloseNow(next.status());
      return false;
    }
    if (!*next) {
      return true;
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
    if (state_ == State::kOpening) {
      state_ = State::kOpen;
      io.timer.cancel();  // the peer has spoken: the open deadline is met
    }
    if (absl::Status taken = OnFrame(frame); !taken.ok()) {
      CloseNow(std::move(taken));
      return false;
    }
    if (closed()) {
      return false;
    }
  }
}

void LinkChannel::Wake() {
  if (wakes_.fetch_add(1, std::memory_order_acq_rel) != 0) {
    return;  // a round is due already (and now knows it is not alone)
  }
  // Posted even from the channel's own thread: what else this turn makes
  // ready goes in the same write.
  asio::post(io_->io, [self = shared_from_this()] {
    // Woken once since it was posted (one call in flight, a pong): nothing is
    // flowing that a later turn would add, so the round is now. A second
    // turn would cost an empty poll of the reactor (Asio polls it between
    // each generation of handlers) and a handler, for nothing.
    uint32_t alone = 1;
    if (self->wakes_.compare_exchange_strong(alone, 0, std::memory_order_acq_rel)) {
      return self->WriteRound();
    }
    // Woken again meanwhile: traffic is flowing. Once more to the back of
    // the queue, so that completions posted behind this one (the next message
    // of a peer whose bytes were already read) add to the write first.
    asio::post(self->io_->io, [self] {
      self->wakes_.store(0, std::memory_order_release);
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
  if ((state_ != State::kOpening && state_ != State::kOpen) || io.write_waiting) {
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
    LinkStep step =
        io.stream.Write(absl::string_view(io.out).substr(io.written));
    switch (step.io) {
      case LinkIo::kDone:
        io.written += step.bytes;
        io.wrote = std::chrono::steady_clock::now();
        continue;
      case LinkIo::kWantRead:
      case LinkIo::kWantWrite:
        io.write_waiting = true;
        io.unacknowledged = -1;
        return WaitThen(step.io == LinkIo::kWantRead, "writing the link", &LinkChannel::WriteReady);
      default:
        return CloseNow(Ended("writing the link", step, /*open=*/true));
    }
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
  // Two turns, like Wake's longest: a write round woken before the close
  // still goes out before it.
  asio::post(io_->io, [self = shared_from_this(), why = std::move(why)]() mutable {
    asio::post(self->io_->io, [self, why = std::move(why)]() mutable {
      self->CloseNow(std::move(why));
    });
  });
}

void LinkChannel::CloseNow(absl::Status why) {
  if (closed()) {
    return;
  }
  state_ = State::kClosed;
  writing_.store(false, std::memory_order_release);
  fd_.store(-1, std::memory_order_release);
  Io& io = *io_;
  io.timer.cancel();
  io.beat.cancel();
  io.resolver.cancel();
  // The TLS state goes with its socket: the descriptor's number may soon be another's.
  io.stream.Release();
  error_code ignored;
  io.socket.shutdown(tcp::socket::shutdown_both, ignored);
  io.socket.close(ignored);
  OnClosed(why);
}

}  // namespace relay::common
