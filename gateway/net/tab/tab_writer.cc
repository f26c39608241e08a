#include "gateway/net/tab/tab_writer.h"

#include <algorithm>
#include <utility>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include "common/log.h"
#include "gateway/core/ws_frame.h"

namespace relay::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;

namespace {

// Entries in one gathered write (a header and a payload per message).
constexpr size_t kMaxWriteEntries = 64;
// What an entry costs beside its bytes, counted against the bound.
constexpr size_t kEntryOverhead = 64;

}  // namespace

TabWriter::TabWriter(TabStream& ws, Owner& owner, size_t max_queued_bytes)
    : ws_(ws), owner_(owner), max_queued_bytes_(max_queued_bytes) {
  ws_.next_layer().set_output(this);
}

void TabWriter::Send(std::string text) {
  // After Beast sent or received a close frame no data frame may follow.
  if (close_ || failed_ || !ws_.is_open()) {
    return;
  }
  std::string header = TextFrameHeader(text.size());
  if (Enqueue(std::move(header))) {
    Enqueue(std::move(text));
  }
}

bool TabWriter::AppendRaw(std::string bytes) {
  return !failed_ && Enqueue(std::move(bytes));
}

bool TabWriter::Enqueue(std::string bytes) {
  queued_bytes_ += bytes.size() + kEntryOverhead;
  if (queued_bytes_ > max_queued_bytes_) {
    // A tab that does not read what it is sent: drop it (it reconnects) rather
    // than queue without bound. No close frame could get through either.
    common::LogWarn("tab not reading; dropping it");
    // (Marked closing; no close frame is sent: the connection is dropped.)
    close_ = websocket::close_reason(websocket::close_code::policy_error);
    Fail(asio::error::no_buffer_space);
    return false;
  }
  outbox_.push_back(std::move(bytes));
  ++appended_;
  ScheduleWrite();
  return true;
}

void TabWriter::ScheduleWrite() {
  if (!in_flight_.empty() || write_scheduled_) {
    return;
  }
  // After the handler that queued this: whatever else it queues (the rest of
  // a link batch's deliveries) goes in the same write.
  write_scheduled_ = true;
  asio::post(ws_.get_executor(), [this, owner = owner_.KeepAlive()] {
    write_scheduled_ = false;
    if (in_flight_.empty() && !failed_ && !outbox_.empty()) {
      DoWrite();
    }
  });
}

void TabWriter::DoWrite() {
  // The entries leave the outbox for the write: what is queued meanwhile may move the outbox's
  // storage, and a short string (a frame header) moves its bytes with it.
  std::vector<asio::const_buffer> buffers;
  buffers.reserve(std::min(outbox_.size(), kMaxWriteEntries));
  while (!outbox_.empty() && in_flight_.size() < kMaxWriteEntries) {
    in_flight_.push_back(std::move(outbox_.front()));
    outbox_.pop_front();
  }
  for (size_t i = 0; i < in_flight_.size(); ++i) {
    buffers.push_back(asio::buffer(in_flight_[i]));
  }
  asio::async_write(beast::get_lowest_layer(ws_).socket(), buffers,
                    [this, owner = owner_.KeepAlive()](beast::error_code ec, size_t) {
                      OnWrite(ec);
                    });
}

void TabWriter::OnWrite(beast::error_code ec) {
  if (failed_) {
    // Failed while this write was in flight: what it held can go now.
    in_flight_.clear();
    return;
  }
  if (ec) {
    return Fail(ec);
  }
  for (const std::string& entry : in_flight_) {
    queued_bytes_ -= entry.size() + kEntryOverhead;
  }
  written_ += in_flight_.size();
  in_flight_.clear();
  if (!outbox_.empty()) {
    DoWrite();
  }
  // Those waiting for what is now written (Beast's own frames, its teardown,
  // our close).
  while (!waiters_.empty() && waiters_.front().first <= written_) {
    auto done = std::move(waiters_.front().second);
    waiters_.pop_front();
    done(beast::error_code());
  }
}

void TabWriter::WhenWritten(absl::AnyInvocable<void(beast::error_code)> done) {
  if (failed_) {
    return done(asio::error::broken_pipe);
  }
  if (written_ >= appended_) {
    return done(beast::error_code());
  }
  waiters_.emplace_back(appended_, std::move(done));
}

void TabWriter::Abort() { Fail(boost::asio::error::connection_aborted); }

void TabWriter::Fail(beast::error_code ec) {
  if (std::exchange(failed_, true)) {
    return;
  }
  beast::error_code ignored;
  beast::get_lowest_layer(ws_).socket().close(ignored);
  outbox_.clear();  // what is in flight stays until its write ends
  auto waiters = std::move(waiters_);
  waiters_.clear();
  for (auto& [target, fn] : waiters) {
    fn(ec);
  }
  owner_.OnTabWriterDone();
}

void TabWriter::CloseWith(uint16_t code, absl::string_view reason) {
  if (close_) {
    return;
  }
  close_ = websocket::close_reason(static_cast<websocket::close_code>(code),
                                  beast::string_view(reason.data(), reason.size()));
  // After what is queued now (no message is queued after this).
  WhenWritten([this, owner = owner_.KeepAlive()](beast::error_code ec) {
    if (!ec) {
      StartClose();
    }
  });
}

void TabWriter::StartClose() {
  if (std::exchange(close_started_, true)) {
    return;
  }
  // Beast queues the close frame through the transport; the pending read
  // ends with an error next; the closing handshake is bounded by the
  // handshake timeout.
  ws_.async_close(*close_, [this, owner = owner_.KeepAlive()](beast::error_code) {
    owner_.OnTabWriterDone();
  });
}

}  // namespace relay::gateway
