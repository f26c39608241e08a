#include "gateway/net/agent/request_reader.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "gateway/net/agent/response_writer.h"

namespace relay::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

constexpr size_t kHeaderLimit = 16 * 1024;
// A body slower than this is given up (and a slow client holds a connection
// only as long as it keeps sending).
constexpr uint64_t kMinBodyBytesPerSecond = 16 * 1024;

}  // namespace

RequestReader::RequestReader(beast::tcp_stream& stream, ReaderOwner& owner, Timeouts timeouts)
    : stream_(stream), owner_(owner), timeouts_(timeouts), idle_timer_(stream.get_executor()) {}

void RequestReader::ReadNext() {
  parser_.emplace();
  parser_->header_limit(kHeaderLimit);
  // No limit while the header is read (Beast would fail an oversized
  // Content-Length right there); the owner checks it and answers 413.
  parser_->body_limit(boost::none);
  body_read_ = false;
  if (buffer_.size() > 0) {
    // Pipelined: the next request is already here. Beast's read posts its completion, so that a
    // client's many small requests sent ahead are not answered in one deepening recursion.
    return ReadHeaderBytes(/*parse_first=*/false);
  }
  // Nothing yet: wait for the first bytes, a keep-alive connection for
  // --idle_timeout, a new one only for --header_timeout.
  wait_ = Wait::kFirstBytes;
  const bool first = std::exchange(first_request_, false);
  WaitAtMost(first ? timeouts_.header : timeouts_.idle, first);
  if (first) {
    return AwaitFirstBytes();
  }
  ReadSome();  // nothing to do if the last call's watch is still reading
}

void RequestReader::WaitAtMost(std::chrono::milliseconds wait, bool first) {
  // The timer is moved only when the deadline comes nearer. A kept-alive connection's deadline
  // moves later at every request, so the timer armed for an earlier one fires first and waits
  // on from there: no timer is armed and cancelled at each call (an allocation, the timer
  // queue twice, and the cancelled wait's handler a turn of the loop later).
  idle_deadline_ = std::chrono::steady_clock::now() + wait;
  idle_first_ = first;
  if (idle_armed_ && idle_timer_.expiry() <= idle_deadline_) {
    return;
  }
  ArmIdleTimer();
}

void RequestReader::ArmIdleTimer() {
  idle_armed_ = true;
  idle_timer_.expires_at(idle_deadline_);
  idle_timer_.async_wait([this, armed = ++idle_armings_,
                          owner = owner_.KeepAlive()](beast::error_code ec) {
    if (ec || armed != idle_armings_) {
      return;  // cancelled (StopWaiting), or armed again since
    }
    idle_armed_ = false;
    if (wait_ != Wait::kFirstBytes) {
      return;  // a request is being read or answered: the next wait arms the timer again
    }
    if (std::chrono::steady_clock::now() < idle_deadline_) {
      return ArmIdleTimer();  // the wait began after this timer was armed
    }
    timed_out_ = idle_first_;
    beast::error_code ignored;
    stream_.socket().cancel(ignored);  // OnBytes: the peer is gone
  });
}

void RequestReader::StopWaiting() {
  if (std::exchange(idle_armed_, false)) {
    ++idle_armings_;
    idle_timer_.cancel();  // its handler holds the owner: let it go now
  }
}

void RequestReader::AwaitFirstBytes() {
  // A new connection waits for its request holding no buffer: when a restarted gateway's tabs
  // and agents come back at once, thousands are accepted before their bytes are read, and a
  // 4 KiB read prepared for each was most of the storm's high-water mark, and of what stayed
  // resident between the connections that stay (docs/decisions.md, "A new connection waits
  // without a buffer"). The header's read, once bytes are there, prepares 512 bytes and grows.
  assert(!read_in_flight_);  // the first request: nothing has read yet
  read_in_flight_ = true;
  stream_.socket().async_wait(asio::ip::tcp::socket::wait_read,
                              [this, owner = owner_.KeepAlive()](beast::error_code ec) {
                                OnBytes(ec, 0);
                              });
}

bool RequestReader::ParseBuffered(beast::error_code& ec) {
  if (buffer_.size() == 0) {
    return false;
  }
  buffer_.consume(parser_->put(buffer_.data(), ec));
  if (ec == http::error::need_more) {
    ec = {};
    return false;
  }
  return true;
}

void RequestReader::ReadHeaderBytes(bool parse_first) {
  // A request's bytes mostly come in one read: parsed here, its header goes on at once. Beast's
  // read would find the same bytes and post its completion, a turn of the loop (and an empty poll
  // of the reactor) for nothing; two of them with the body (docs/performance.md, "-c1").
  beast::error_code parsed;
  if (parse_first && ParseBuffered(parsed)) {
    return OnHeaderRead(parsed);
  }
  // However slowly the rest comes, the whole header has --header_timeout.
  stream_.expires_after(timeouts_.header);
  http::async_read_header(stream_, buffer_, *parser_,
                          [this, owner = owner_.KeepAlive()](beast::error_code ec, size_t) {
                            OnHeaderRead(ec);
                          });
}

void RequestReader::OnHeaderRead(beast::error_code ec) {
  if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
    return owner_.OnHeaderTooLarge();
  }
  if (ec) {
    timed_out_ = ec == beast::error::timeout;
    return owner_.OnPeerGone();  // closed, reset, timeout or garbage
  }
  owner_.OnHeader();
}

void RequestReader::StartBody(uint64_t bytes) {
  // The body's own time: the header's went partly to reading it and to the
  // verdict on its bearer.
  body_deadline_ = std::chrono::steady_clock::now() + timeouts_.header +
                   std::chrono::seconds(bytes / kMinBodyBytesPerSecond);
}

void RequestReader::ExpireForBody() {
  stream_.expires_at(
      std::min(std::chrono::steady_clock::now() + timeouts_.header, body_deadline_));
}

void RequestReader::ReadBody(uint64_t limit, std::optional<uint64_t> length) {
  if (parser_->is_done()) {
    // No body (Content-Length: 0, or none): a read would wait for bytes that
    // are not coming. Posted, as a read's completion would be.
    return asio::post(stream_.get_executor(), [this, owner = owner_.KeepAlive()] {
      body_read_ = true;
      owner_.OnBody();
    });
  }
  parser_->body_limit(limit);
  StartBody(length.value_or(limit));
  // Mostly the body came with its header: on at once, as ReadHeaderBytes.
  beast::error_code parsed;
  if (ParseBuffered(parsed) && (parsed || parser_->is_done())) {
    return OnBodyRead(parsed);
  }
  ReadBodySome();
}

void RequestReader::ReadBodySome() {
  ExpireForBody();
  http::async_read_some(stream_, buffer_, *parser_,
                        [this, owner = owner_.KeepAlive()](beast::error_code ec, size_t) {
                          OnBodyRead(ec);
                        });
}

void RequestReader::OnBodyRead(beast::error_code ec) {
  // A chunked body over the limit, or a chunk's header or trailer that does not end.
  if (ec == http::error::body_limit || ec == http::error::buffer_overflow) {
    return owner_.OnBodyTooLarge();
  }
  if (ec) {
    timed_out_ = ec == beast::error::timeout;
    return owner_.OnPeerGone();
  }
  if (!parser_->is_done()) {
    return ReadBodySome();
  }
  body_read_ = true;
  owner_.OnBody();
}

void RequestReader::DiscardBody(uint64_t length) {
  // Read to the end before the 413: many clients fail on an answer that comes
  // while they are still sending.
  StartBody(length);
  Discard(length);
}

void RequestReader::Discard(uint64_t remaining) {
  size_t buffered = static_cast<size_t>(std::min<uint64_t>(remaining, buffer_.size()));
  buffer_.consume(buffered);
  remaining -= buffered;
  if (remaining == 0) {
    body_read_ = true;
    return owner_.OnBodyTooLarge();
  }
  ExpireForBody();
  stream_.async_read_some(
      buffer_.prepare(static_cast<size_t>(std::min<uint64_t>(remaining, 64 * 1024))),
      [this, owner = owner_.KeepAlive(), remaining](beast::error_code ec, size_t bytes) {
        if (ec) {
          timed_out_ = ec == beast::error::timeout;
          return owner_.OnPeerGone();
        }
        buffer_.commit(bytes);
        Discard(remaining);
      });
}

void RequestReader::Watch() {
  // Only into an empty buffer: then a read is never in flight while bytes
  // wait in the buffer, and ReadNext may parse them at once.
  if (buffer_.size() == 0 && wait_ == Wait::kNone) {
    wait_ = Wait::kWatch;
    ReadSome();
  }
}

void RequestReader::ReleaseIdleBuffer() {
  if (!read_in_flight_) {
    buffer_.shrink_to_fit();
  }
}

void RequestReader::ReadSome() {
  if (read_in_flight_) {
    return;
  }
  read_in_flight_ = true;
  stream_.socket().async_read_some(
      buffer_.prepare(4096), [this, owner = owner_.KeepAlive()](beast::error_code ec,
                                                                size_t bytes) {
        OnBytes(ec, bytes);
      });
}

void RequestReader::OnBytes(beast::error_code ec, size_t bytes) {
  read_in_flight_ = false;
  if (!ec) {
    buffer_.commit(bytes);
  }
  switch (std::exchange(wait_, Wait::kNone)) {
    case Wait::kClosing:
      if (!ec || ec == asio::error::operation_aborted) {
        CloseLingering(stream_.socket(), owner_.KeepAlive());
      }
      return;
    case Wait::kFirstBytes:
      if (ec) {
        return owner_.OnPeerGone();  // gone, or idle too long
      }
      // The bytes came: a timer that fired in the same turn, before this ran, was too late.
      timed_out_ = false;
      return ReadHeaderBytes(/*parse_first=*/true);
    case Wait::kWatch:
      if (ec) {
        return owner_.OnPeerGone();
      }
      return;  // a request sent ahead: kept for after the answer
    case Wait::kNone:
      return;
  }
}

void RequestReader::Close() {
  StopWaiting();
  if (read_in_flight_) {
    // The watch holds the read side: stop it; OnBytes closes.
    wait_ = Wait::kClosing;
    beast::error_code ignored;
    stream_.socket().cancel(ignored);
    return;
  }
  wait_ = Wait::kNone;
  CloseLingering(stream_.socket(), owner_.KeepAlive());
}

namespace {

template <typename Key>
std::optional<absl::string_view> Find(const RequestReader::Parser& parser, Key key) {
  const auto& req = parser.get();
  auto it = req.find(key);
  if (it == req.end()) {
    return std::nullopt;
  }
  return absl::string_view(it->value().data(), it->value().size());
}

}  // namespace

std::optional<absl::string_view> RequestReader::Header(http::field field) const {
  return Find(*parser_, field);
}

std::optional<absl::string_view> RequestReader::Header(absl::string_view name) const {
  return Find(*parser_, beast::string_view(name.data(), name.size()));
}

std::optional<uint64_t> RequestReader::ContentLength() const {
  // From the header, not Beast's boost::optional (which trips GCC's
  // maybe-uninitialized warning under the sanitizers). Beast takes a list of
  // equal values ("5, 5") as one; so must the limits, or a list would pass
  // them.
  auto header = Header(http::field::content_length);
  if (!header) {
    return std::nullopt;
  }
  uint64_t length = 0;
  for (absl::string_view item : absl::StrSplit(*header, ',')) {
    uint64_t value = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(item), &value)) {
      // Not what Beast admits: take it for too long, never for no length.
      return std::numeric_limits<uint64_t>::max();
    }
    length = value;
  }
  return length;
}

bool RequestReader::BodyUnread() const {
  const auto& req = parser_->get();
  return !body_read_ && (req.has_content_length() || req.chunked()) && !parser_->is_done();
}

}  // namespace relay::gateway
