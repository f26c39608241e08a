#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "common/fifo.h"

namespace relay::gateway {

// The bytes of the gateway's HTTP/1.1 answers and SSE streams. The gateway
// writes them by hand (one string per answer, one chunk per event), so these
// are plain functions, tested without sockets.

// The reason phrase of a status ("Not Found"); "Unknown" for one we never send.
absl::string_view ReasonPhrase(int status);

// A whole response with a Content-Length body. extra_headers are
// "Name: value\r\n" lines; keep_alive false adds "Connection: close", true
// with keep_alive_timeout_s >= 0 adds "Keep-Alive: timeout=N": how long the
// connection is kept idle, so that a client's pool lets it go first instead
// of sending its next request as the gateway closes it.
std::string EncodeResponse(int status, absl::string_view content_type, absl::string_view body,
                           absl::string_view extra_headers, bool keep_alive,
                           int keep_alive_timeout_s = -1);

// {"error": message}: the body of the gateway's own refusals.
std::string JsonErrorBody(absl::string_view message);

// The head of an SSE response (chunked, unbuffered by proxies).
std::string EncodeSseHead(absl::string_view extra_headers);
// One SSE "message" event as one chunk; event_id 0 sends no "id:" line.
// message is JSON: its line breaks (white space between tokens) go out as
// spaces, so that it is one data line.
std::string EncodeSseEvent(absl::string_view message, uint64_t event_id);
// A comment chunk that keeps proxies from cutting an idle stream.
std::string EncodeSseKeepAlive();
// The chunk that ends a chunked body.
inline constexpr absl::string_view kLastChunk = "0\r\n\r\n";

// What one connection has to write: whole answers, SSE heads and chunks, in
// order. Bounded: a client that does not read gets dropped instead of making
// the gateway hold its output without limit. One write in flight takes
// everything queued before it (a gathered write: one system call for a burst
// of events). Not thread-safe: the connection's I/O thread owns it.
class OutputQueue {
 public:
  explicit OutputQueue(size_t max_bytes) : max_bytes_(max_bytes) {}

  // False, with nothing queued, when the bound would be passed.
  bool Push(std::string bytes);
  // Whether a write may start now: something waits and none is in flight.
  bool ready() const { return !writing_ && !waiting_.empty(); }
  // The strings of the next write, in order; valid until Written().
  const std::vector<std::string>& StartWrite();
  // The write in flight completed.
  void Written();

  bool writing() const { return writing_; }
  bool idle() const { return !writing_ && waiting_.empty(); }
  size_t queued_bytes() const { return queued_bytes_; }

 private:
  const size_t max_bytes_;
  common::Fifo<std::string> waiting_;
  std::vector<std::string> in_flight_;
  size_t queued_bytes_ = 0;  // waiting and in flight
  bool writing_ = false;
};

}  // namespace relay::gateway
