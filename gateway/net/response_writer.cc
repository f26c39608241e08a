#include "gateway/net/response_writer.h"

#include <algorithm>
#include <array>
#include <vector>

#include <boost/asio/write.hpp>

#include "common/log.h"

namespace relay::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;

ResponseWriter::ResponseWriter(beast::tcp_stream& stream, WriterOwner& owner,
                               std::chrono::milliseconds sse_keepalive, size_t max_queued_bytes)
    : stream_(stream), owner_(owner), sse_keepalive_(sse_keepalive), out_(max_queued_bytes),
      keepalive_timer_(stream.get_executor()) {}

void ResponseWriter::Respond(int status, absl::string_view content_type, absl::string_view body,
                             absl::string_view extra_headers, bool keep_alive) {
  then_ = keep_alive ? AfterResponse::kReadNext : AfterResponse::kClose;
  Enqueue(EncodeResponse(status, content_type, body, extra_headers, keep_alive));
}

void ResponseWriter::StartSse(absl::string_view extra_headers) {
  sse_ = true;
  then_.reset();
  Enqueue(EncodeSseHead(extra_headers));
  ScheduleKeepAlive();
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
}

void ResponseWriter::ScheduleKeepAlive() {
  keepalive_timer_.expires_after(sse_keepalive_);
  keepalive_timer_.async_wait([this, owner = owner_.KeepAlive()](beast::error_code ec) {
    if (ec || !sse_ || stopped_) {
      return;
    }
    // A comment line: proxies see traffic and do not cut an idle stream.
    Enqueue(EncodeSseKeepAlive());
    ScheduleKeepAlive();
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
    Stop();
    beast::error_code ignored;
    stream_.socket().close(ignored);
    return owner_.OnWriteFailed();
  }
  if (out_.ready()) {
    DoWrite();
  }
}

void ResponseWriter::DoWrite() {
  std::vector<asio::const_buffer> buffers;
  for (const std::string& bytes : out_.StartWrite()) {
    buffers.push_back(asio::buffer(bytes));
  }
  asio::async_write(stream_.socket(), buffers,
                    [this, owner = owner_.KeepAlive()](beast::error_code ec, size_t bytes) {
                      OnWrite(ec, bytes);
                    });
}

void ResponseWriter::OnWrite(beast::error_code ec, size_t) {
  out_.Written();
  if (stopped_) {
    return;
  }
  if (ec) {
    Stop();
    beast::error_code ignored;
    stream_.socket().close(ignored);
    return owner_.OnWriteFailed();
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

struct Linger {
  std::array<char, 16 * 1024> buffer;
  std::chrono::steady_clock::time_point until;
  std::shared_ptr<void> owner;
};

void ReadAndDrop(beast::tcp_stream& stream, std::shared_ptr<Linger> linger) {
  // One deadline for all the reads: a client that keeps sending cannot hold
  // the connection.
  stream.expires_at(linger->until);
  Linger& state = *linger;
  stream.async_read_some(asio::buffer(state.buffer),
                         [&stream, linger = std::move(linger)](beast::error_code ec, size_t) {
                           if (!ec) {
                             ReadAndDrop(stream, std::move(linger));
                           }
                         });
}

}  // namespace

void CloseLingering(beast::tcp_stream& stream, std::shared_ptr<void> owner) {
  beast::error_code ignored;
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  auto linger = std::make_shared<Linger>();
  linger->until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  linger->owner = std::move(owner);
  ReadAndDrop(stream, std::move(linger));
}

}  // namespace relay::gateway
