#include "gateway/net/agent/response_writer.h"

#include <algorithm>
#include <array>
#include <vector>

#include <boost/asio/write.hpp>

#include "common/log.h"
#include "gateway/core/keepalive_phase.h"
#include "gateway/net/gathered_buffers.h"

namespace relay::gateway {

namespace asio = boost::asio;

ResponseWriter::ResponseWriter(asio::ip::tcp::socket& socket, WriterOwner& owner,
                               std::chrono::milliseconds sse_keepalive, size_t max_queued_bytes,
                               std::chrono::milliseconds write_timeout,
                               std::chrono::milliseconds keep_alive_timeout)
    : socket_(socket), owner_(owner), sse_keepalive_(sse_keepalive), out_(max_queued_bytes),
      keepalive_timer_(socket.get_executor()), write_timeout_(write_timeout),
      keep_alive_timeout_s_(static_cast<int>(
          std::chrono::duration_cast<std::chrono::seconds>(keep_alive_timeout).count())),
      write_timer_(socket.get_executor()) {}

void ResponseWriter::Respond(int status, absl::string_view content_type, absl::string_view body,
                             absl::string_view extra_headers, bool keep_alive) {
  then_ = keep_alive ? AfterResponse::kReadNext : AfterResponse::kClose;
  Enqueue(EncodeResponse(status, content_type, body, extra_headers, keep_alive,
                         keep_alive_timeout_s_));
}

void ResponseWriter::Continue() { Enqueue(std::string("HTTP/1.1 100 Continue\r\n\r\n")); }

void ResponseWriter::StartSse(absl::string_view extra_headers) {
  sse_ = true;
  then_.reset();
  Enqueue(EncodeSseHead(extra_headers));
  // The first a spread part of a period away: streams opened together do
  // not keep their comments in step (KeepAlivePhase).
  ScheduleKeepAlive(KeepAlivePhase::First(sse_keepalive_));
}

void ResponseWriter::SendEvent(absl::string_view message, uint64_t event_id) {
  Enqueue(EncodeSseEvent(message, event_id));
}

void ResponseWriter::EndSse(bool keep_alive) {
  // A keep-alive whose timer already fired must not follow the last chunk.
  sse_ = false;
  keepalive_timer_.cancel();
  then_ = keep_alive ? AfterResponse::kReadNext : AfterResponse::kClose;
  Enqueue(std::string(kLastChunk));
}

void ResponseWriter::Stop() {
  stopped_ = true;
  sse_ = false;
  keepalive_timer_.cancel();
  // Its handler holds the owner: let the owner go now, not at the deadline.
  write_timer_.cancel();
}

void ResponseWriter::Fail() {
  Stop();
  boost::system::error_code ignored;
  socket_.close(ignored);
  owner_.OnWriteFailed();
}

void ResponseWriter::WatchWrites() {
  watching_writes_ = true;
  write_timer_.expires_at(write_moved_ + write_timeout_);
  write_timer_.async_wait([this, owner = owner_.KeepAlive()](boost::system::error_code ec) {
    watching_writes_ = false;
    if (ec || stopped_ || !out_.writing()) {
      return;  // stopped, or nothing in flight: the next write arms it again
    }
    if (std::chrono::steady_clock::now() - write_moved_ >= write_timeout_) {
      // The client keeps the connection but takes nothing: let it go rather
      // than hold the connection and its output for ever.
      common::LogWarn("agent connection takes no bytes; closing it");
      return Fail();
    }
    WatchWrites();  // it moved meanwhile: a new deadline from there
  });
}

void ResponseWriter::ScheduleKeepAlive(std::chrono::milliseconds after) {
  keepalive_timer_.expires_after(after);
  keepalive_timer_.async_wait([this, owner = owner_.KeepAlive()](boost::system::error_code ec) {
    if (ec || !sse_ || stopped_) {
      return;
    }
    // A comment line: proxies see traffic and do not cut an idle stream.
    Enqueue(EncodeSseKeepAlive());
    ScheduleKeepAlive(sse_keepalive_);
  });
}

void ResponseWriter::Enqueue(std::string bytes) {
  if (stopped_) {
    return;
  }
  if (!out_.Push(std::move(bytes))) {
    // A client that keeps a stream open but does not read: let it go rather
    // than hold its output without bound.
    common::LogWarn("agent connection not read; closing it");
    return Fail();
  }
  if (out_.ready()) {
    DoWrite();
  }
}

void ResponseWriter::DoWrite() {
  const std::vector<std::string>& strings = out_.StartWrite();
  write_moved_ = std::chrono::steady_clock::now();
  if (!watching_writes_) {
    WatchWrites();
  }
  // Asks before each send how much is left: a large answer to a slow client
  // shows its headway as it goes.
  auto moved = [this, sent = size_t{0}](const boost::system::error_code& ec, size_t bytes) mutable {
    if (bytes != sent) {
      sent = bytes;
      write_moved_ = std::chrono::steady_clock::now();
    }
    return asio::transfer_all()(ec, bytes);
  };
  WithGatheredBuffers(strings, [&](const auto& buffers) {
    asio::async_write(
        socket_, buffers, std::move(moved),
        [this, owner = owner_.KeepAlive()](boost::system::error_code ec, size_t bytes) {
          OnWrite(ec, bytes);
        });
  });
}

void ResponseWriter::OnWrite(boost::system::error_code ec, size_t) {
  out_.Written();
  if (stopped_) {
    return;
  }
  if (ec) {
    return Fail();
  }
  if (out_.ready()) {
    return DoWrite();
  }
  if (then_) {
    AfterResponse next = *then_;
    then_.reset();
    owner_.OnResponseWritten(next);
  }
}

size_t MaxQueuedBytes(const GatewayOptions& options) {
  return std::max<size_t>(16 << 20, options.max_tab_message_bytes + (1 << 20));
}

namespace {

// What a lingering close holds: its deadline and the connection's owner (and so its socket).
struct Linger {
  explicit Linger(const asio::any_io_executor& executor) : deadline(executor) {}
  asio::steady_timer deadline;
  std::shared_ptr<void> owner;
};

void DrainUntilClosed(asio::ip::tcp::socket& socket, std::shared_ptr<Linger> linger) {
  socket.async_wait(asio::ip::tcp::socket::wait_read,
                    [&socket, linger](boost::system::error_code ec) mutable {
                      if (!ec) {
                        // A few reads per wake, then wait again: a client that sends as fast
                        // as it can must not keep this thread (or pass the deadline).
                        std::array<char, 16 * 1024> dropped;
                        for (int reads = 0; reads < 4; ++reads) {
                          socket.read_some(asio::buffer(dropped), ec);
                          if (ec == asio::error::would_block || ec == asio::error::try_again) {
                            return DrainUntilClosed(socket, std::move(linger));
                          }
                          if (ec) {
                            break;
                          }
                        }
                        if (!ec) {
                          return DrainUntilClosed(socket, std::move(linger));
                        }
                      }
                      // The peer closed or reset, the socket was closed already, or the
                      // deadline closed it: nothing is left to protect. The socket goes now,
                      // whoever still holds the owner.
                      linger->deadline.cancel();
                      boost::system::error_code ignored;
                      socket.close(ignored);
                    });
}

}  // namespace

void CloseLingering(asio::ip::tcp::socket& socket, std::shared_ptr<void> owner) {
  boost::system::error_code ignored;
  socket.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  socket.non_blocking(true, ignored);
  auto linger = std::make_shared<Linger>(socket.get_executor());
  linger->owner = std::move(owner);
  // One deadline for all the reads: a client that keeps sending cannot hold the connection.
  // Its handler holds the linger too, so the socket outlives whichever handler runs last.
  linger->deadline.expires_after(std::chrono::seconds(2));
  linger->deadline.async_wait([&socket, linger](boost::system::error_code ec) {
    if (!ec) {
      boost::system::error_code ignored;
      socket.close(ignored);  // the pending wait ends (aborted) and lets go
    }
  });
  DrainUntilClosed(socket, std::move(linger));
}

}  // namespace relay::gateway
