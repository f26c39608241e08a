#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "absl/strings/string_view.h"

namespace relay::gateway {

// What a RequestReader tells the connection that owns it.
class ReaderOwner {
 public:
  virtual ~ReaderOwner() = default;
  // Held by every pending read and timer of the reader (see WriterOwner).
  virtual std::shared_ptr<void> KeepAlive() = 0;
  // A request's header is in: parser() holds it.
  virtual void OnHeader() = 0;
  // Its body is in (ReadBody).
  virtual void OnBody() = 0;
  // The header is over its limit (answer 431), or the body over the one
  // ReadBody or DiscardBody was given (answer 413).
  virtual void OnHeaderTooLarge() = 0;
  virtual void OnBodyTooLarge() = 0;
  // The peer closed, reset, sent garbage, or was too slow: nothing to answer.
  virtual void OnPeerGone() = 0;
};

// The input side of one agent connection: one request after the other, each
// header within --header_timeout, the wait for the next within
// --idle_timeout (--header_timeout for a new connection), bytes a client sent
// ahead kept for the next request; and, while a call lasts, a watch that
// notices the agent going away.
//
// At most one read is in flight on the socket: the wait for the next
// request's first bytes and the watch are the same read, so the end of an
// answer never has to stop a watch before it reads on. Runs on its owner's
// I/O thread.
class RequestReader {
 public:
  struct Timeouts {
    std::chrono::milliseconds header;
    std::chrono::milliseconds idle;
  };
  RequestReader(boost::beast::tcp_stream& stream, ReaderOwner& owner, Timeouts timeouts);

  using Parser = boost::beast::http::request_parser<boost::beast::http::string_body>;

  // Reads the next request's header; OnHeader or another callback follows.
  void ReadNext();
  // Reads the body, up to limit bytes; OnBody or OnBodyTooLarge follows. The
  // body's bytes must keep coming (none for --header_timeout: given up), and
  // all of them within --header_timeout plus a second per 16 KiB it is long
  // (length: its Content-Length, already read by the caller) or may be.
  void ReadBody(uint64_t limit, std::optional<uint64_t> length);
  // Reads a body of length bytes and drops it; OnBodyTooLarge follows. The
  // same deadlines.
  void DiscardBody(uint64_t length);
  // While a call lasts: notice the peer going away (OnPeerGone). Stops by
  // itself when the peer sends bytes ahead (kept for the next request).
  void Watch();
  // Nothing will be read for a while (authsvc is asked about the bearer): the read buffer
  // shrinks to what it holds (nothing, after a GET's head). When a restarted gateway's agents
  // all come back at once, thousands of connections wait here.
  void ReleaseIdleBuffer();
  // The connection ends: once no read is in flight, CloseLingering.
  void Close();
  // The wait for the next request's first bytes is over for good: the
  // connection closes (Close) or is handed over (a tab's WebSocket, an SSE
  // stream). The timer's handler, which holds the owner, goes at once.
  void StopWaiting();

  Parser& parser() { return *parser_; }
  const Parser& parser() const { return *parser_; }
  // A header's value, kept by the parser until the next request is read
  // (ReadNext): copy what must outlive it.
  std::optional<absl::string_view> Header(boost::beast::http::field field) const;
  std::optional<absl::string_view> Header(absl::string_view name) const;
  // The request's Content-Length, if it has one (Beast has checked it: one
  // number, or a list of equal ones).
  std::optional<uint64_t> ContentLength() const;
  // The request has a body that was not read: the connection cannot carry
  // another request.
  bool BodyUnread() const;
  // The request was given up because it came too slowly: a new connection's first bytes, a
  // header or a body not in within its time (not a keep-alive connection left idle). Read in
  // OnPeerGone, to count it.
  bool TimedOut() const { return timed_out_; }

 private:
  enum class Wait { kNone, kFirstBytes, kWatch, kClosing };

  // parse_first: the bytes were just read, in a handler of their own; what they hold goes on
  // from here, without a turn of the loop.
  void ReadHeaderBytes(bool parse_first);
  // The next request's first bytes are due within wait (first: a new
  // connection's, given up as timed out).
  void WaitAtMost(std::chrono::milliseconds wait, bool first);
  void ArmIdleTimer();
  void OnHeaderRead(boost::beast::error_code ec);
  void OnBodyRead(boost::beast::error_code ec);
  // Gives the parser what the buffer holds. True when it moved on (a header or body bytes taken,
  // or ec a failure), false when it needs more from the socket.
  bool ParseBuffered(boost::beast::error_code& ec);
  void ReadSome();
  // The first request's wait: readability, no read prepared.
  void AwaitFirstBytes();
  void OnBytes(boost::beast::error_code ec, size_t bytes);
  void Discard(uint64_t remaining);
  void ReadBodySome();
  // Sets body_deadline_ for a body of up to bytes.
  void StartBody(uint64_t bytes);
  // Before each read of a body: its next bytes are due.
  void ExpireForBody();

  // What waits unparsed: a header (16 KiB), a chunk's header or trailer
  // (Beast bounds neither), reads ahead. Past it a body read fails.
  static constexpr size_t kMaxBuffered = 1 << 20;

  boost::beast::tcp_stream& stream_;
  ReaderOwner& owner_;
  const Timeouts timeouts_;
  boost::beast::flat_buffer buffer_{kMaxBuffered};
  std::optional<Parser> parser_;
  boost::asio::steady_timer idle_timer_;
  // When the wait for the next request's first bytes ends (WaitAtMost).
  std::chrono::steady_clock::time_point idle_deadline_;
  uint64_t idle_armings_ = 0;  // a handler of an earlier arming does nothing
  bool idle_armed_ = false;
  bool idle_first_ = false;
  std::chrono::steady_clock::time_point body_deadline_;
  Wait wait_ = Wait::kNone;
  bool read_in_flight_ = false;
  bool first_request_ = true;
  bool body_read_ = false;
  bool timed_out_ = false;
};

}  // namespace relay::gateway
