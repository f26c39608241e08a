#include "gateway/net/tab/tab_reader.h"

namespace relay::gateway {

namespace beast = boost::beast;

namespace {

// An idle tab waits with a read this small pending: tens of thousands of idle tabs per gateway.
constexpr size_t kIdleReadChunk = 512;
constexpr size_t kSmallReadChunk = 2 * 1024;
constexpr size_t kLargeReadChunk = 64 * 1024;

}  // namespace

void TabReader::Start(size_t limit) {
  limit_ = limit;
  // Messages are read in chunks and measured here.
  ws_.read_message_max(0);
  DoRead();
}

void TabReader::DoRead() {
  ws_.async_read_some(
      buffer_.prepare(buffer_.size() == 0 ? kIdleReadChunk
                      : buffer_.size() < kSmallReadChunk ? kSmallReadChunk
                                                          : kLargeReadChunk),
      [this, owner = owner_.KeepAlive()](beast::error_code ec, size_t bytes) {
        OnRead(ec, bytes);
      });
}

void TabReader::OnRead(beast::error_code ec, size_t bytes) {
  if (ec) {
    return owner_.OnTabReadEnded(ec);
  }
  buffer_.commit(bytes);
  if (buffer_.size() > limit_) {
    buffer_.consume(buffer_.size());
    stopped_ = true;
    return owner_.OnTabMessageTooBig();
  }
  if (ws_.is_message_done()) {
    if (!ws_.got_text()) {
      stopped_ = true;
      return owner_.OnTabMessageBinary();
    }
    std::string text = beast::buffers_to_string(buffer_.data());
    buffer_.consume(buffer_.size());
    if (buffer_.capacity() > kSmallReadChunk) {
      buffer_.shrink_to_fit();  // a large message is not kept for the idle time after it
    }
    owner_.OnTabMessage(std::move(text));
  }
  if (!stopped_) {
    DoRead();
  }
}

}  // namespace relay::gateway
