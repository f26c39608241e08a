#include "gateway/net/tab_writer.h"

#include <boost/asio/buffer.hpp>

#include "common/log.h"

namespace relay::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;

TabWriter::TabWriter(Stream& ws, Owner& owner, size_t max_queued_bytes)
    : ws_(ws), owner_(owner), max_queued_bytes_(max_queued_bytes) {}

void TabWriter::Send(std::string text) {
  if (close_) {
    return;
  }
  queued_bytes_ += text.size();
  if (queued_bytes_ > max_queued_bytes_) {
    // A tab that does not read what it is sent: drop it (it reconnects) rather
    // than queue without bound. No close frame could get through either.
    common::LogWarn("tab not reading; dropping it");
    close_ = websocket::close_reason(websocket::close_code::policy_error);
    beast::get_lowest_layer(ws_).close();
    return owner_.OnTabWriterDone();
  }
  outbox_.push_back(std::move(text));
  if (!writing_) {
    DoWrite();
  }
}

void TabWriter::DoWrite() {
  writing_ = true;
  ws_.text(true);
  ws_.async_write(asio::buffer(outbox_.front()),
                  [this, owner = owner_.KeepAlive()](beast::error_code ec, size_t) {
                    OnWrite(ec);
                  });
}

void TabWriter::OnWrite(beast::error_code ec) {
  writing_ = false;
  if (ec) {
    return owner_.OnTabWriterDone();
  }
  queued_bytes_ -= outbox_.front().size();
  outbox_.pop_front();
  if (!outbox_.empty()) {
    DoWrite();
  } else if (close_) {
    StartClose();
  }
}

void TabWriter::CloseWith(uint16_t code, absl::string_view reason) {
  if (close_) {
    return;
  }
  close_ = websocket::close_reason(static_cast<websocket::close_code>(code),
                                  beast::string_view(reason.data(), reason.size()));
  if (!writing_) {
    StartClose();
  }
}

void TabWriter::StartClose() {
  if (std::exchange(close_started_, true)) {
    return;
  }
  // The pending read ends with an error next; the closing handshake is
  // bounded by the handshake timeout.
  ws_.async_close(*close_, [this, owner = owner_.KeepAlive()](beast::error_code) {
    owner_.OnTabWriterDone();
  });
}

}  // namespace relay::gateway
