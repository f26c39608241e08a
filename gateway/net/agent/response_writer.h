#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "absl/strings/string_view.h"
#include "gateway/core/http_framing.h"
#include "gateway/net/gateway_state.h"

namespace relay::gateway {

// What a connection does once a response is all written.
enum class AfterResponse { kReadNext, kClose };

// What a ResponseWriter tells the connection that owns it.
class WriterOwner {
 public:
  virtual ~WriterOwner() = default;
  // Held by every pending write and timer of the writer, so that the owner
  // (which holds the writer and the socket) outlives them.
  virtual std::shared_ptr<void> KeepAlive() = 0;
  // The response is out: read the next request, or close.
  virtual void OnResponseWritten(AfterResponse next) = 0;
  // The peer cannot be written to (an error, or unread output over the
  // bound): the writer has closed the socket and writes nothing more.
  virtual void OnWriteFailed() = 0;
};

// The output side of one agent connection: whole responses and SSE streams
// (framing from http_framing.h), everything queued going out in one gathered
// write while none is in flight, keep-alive comments while an SSE response is
// open, and the end of each response. Runs on its owner's I/O thread.
class ResponseWriter {
 public:
  // A write that makes no headway for write_timeout (the client takes no
  // bytes) ends the connection (OnWriteFailed). keep_alive_timeout: how long
  // the connection is kept idle after an answer, said in its Keep-Alive.
  ResponseWriter(boost::asio::ip::tcp::socket& socket, WriterOwner& owner,
                 std::chrono::milliseconds sse_keepalive, size_t max_queued_bytes,
                 std::chrono::milliseconds write_timeout,
                 std::chrono::milliseconds keep_alive_timeout);

  // A whole response; once written, the owner reads the next request or closes.
  void Respond(int status, absl::string_view content_type, absl::string_view body,
               absl::string_view extra_headers, bool keep_alive);
  // "100 Continue": the client may send the body it holds back (an interim
  // response; the real one follows).
  void Continue();
  // An SSE response: its head, events, and its end.
  void StartSse(absl::string_view extra_headers = "");
  void SendEvent(absl::string_view message, uint64_t event_id = 0);
  void EndSse(bool keep_alive);
  bool in_sse() const { return sse_; }
  // Nothing more is queued or written (the connection is closing).
  void Stop();

 private:
  void Enqueue(std::string bytes);
  void DoWrite();
  void OnWrite(boost::system::error_code ec, size_t bytes);
  void ScheduleKeepAlive(std::chrono::milliseconds after);
  // Armed while writes are in flight, at most once per write_timeout_ (not
  // once per write): a write in flight must move within write_timeout_ of
  // its last headway (write_moved_).
  void WatchWrites();
  void Fail();

  boost::asio::ip::tcp::socket& socket_;
  WriterOwner& owner_;
  const std::chrono::milliseconds sse_keepalive_;
  OutputQueue out_;
  boost::asio::steady_timer keepalive_timer_;
  const std::chrono::milliseconds write_timeout_;
  // Whole seconds, rounded down: a client's pool lets the connection go
  // before the gateway closes it (a second early, as Node's fetch does).
  const int keep_alive_timeout_s_;
  boost::asio::steady_timer write_timer_;
  std::chrono::steady_clock::time_point write_moved_;
  bool watching_writes_ = false;
  // Set when the response's last bytes are queued; told to the owner once
  // they are written.
  std::optional<AfterResponse> then_;
  bool sse_ = false;
  bool stopped_ = false;
};

// Unwritten output one agent connection may hold before it counts as not
// reading: 16 MiB, and always room for the largest tab answer with its framing.
size_t MaxQueuedBytes(const GatewayOptions& options);

// Ends a connection without losing its last answer: shuts the send side, then
// reads and drops what the peer still sends for up to two seconds, because
// closing with unread input makes the kernel send a reset that can destroy an
// answer (a 413, a 401) before the client reads it. Nothing else may read the
// socket meanwhile; owner (which holds the socket) is held until the peer has
// closed or the two seconds are over. A lingering connection holds no read
// buffer: it waits for readability and drains into the stack (a storm of
// connections closing after their answers lingers by the thousand).
void CloseLingering(boost::asio::ip::tcp::socket& socket, std::shared_ptr<void> owner);

}  // namespace relay::gateway
