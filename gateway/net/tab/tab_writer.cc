#include "gateway/net/tab/tab_writer.h"

#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include "common/log.h"
#include "gateway/core/ws_frame.h"
#include "gateway/net/gathered_buffers.h"

namespace relay::gateway {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

// Entries in one gathered write (a header and a payload per message).
constexpr size_t kMaxWriteEntries = 64;
// What an entry costs beside its bytes, counted against the bound.
constexpr size_t kEntryOverhead = 64;

}  // namespace

TabWriter::TabWriter(asio::ip::tcp::socket& socket, Owner& owner, size_t max_queued_bytes)
    : socket_(socket), owner_(owner), max_queued_bytes_(max_queued_bytes) {}

void TabWriter::SendRaw(std::string bytes) {
  if (!closing_ && !failed_) {
    Enqueue(std::move(bytes));
  }
}

void TabWriter::Send(std::string text) {
  // After the close frame no frame may follow.
  if (closing_ || failed_) {
    return;
  }
  std::string header = TextFrameHeader(text.size());
  if (Enqueue(std::move(header))) {
    Enqueue(std::move(text));
  }
}

bool TabWriter::Enqueue(std::string bytes) {
  queued_bytes_ += bytes.size() + kEntryOverhead;
  if (queued_bytes_ > max_queued_bytes_) {
    // A tab that does not read what it is sent: drop it (it reconnects) rather
    // than queue without bound. No close frame could get through either.
    common::LogWarn("tab not reading; dropping it");
    closing_ = true;
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
  asio::post(socket_.get_executor(), [this, owner = owner_.KeepAlive()] {
    write_scheduled_ = false;
    if (in_flight_.empty() && !failed_ && !outbox_.empty()) {
      DoWrite();
    }
  });
}

void TabWriter::DoWrite() {
  // The entries leave the outbox for the write: what is queued meanwhile may move the outbox's
  // storage, and a short string (a frame header) moves its bytes with it.
  while (!outbox_.empty() && in_flight_.size() < kMaxWriteEntries) {
    in_flight_.push_back(std::move(outbox_.front()));
    outbox_.pop_front();
  }
  WithGatheredBuffers(in_flight_, [this](const auto& buffers) {
    asio::async_write(socket_, buffers, [this, owner = owner_.KeepAlive()](error_code ec, size_t) {
      OnWrite(ec);
    });
  });
}

void TabWriter::OnWrite(error_code ec) {
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
  owner_.OnTabWritten(written_);
  // Those waiting for what is now written (the close frame).
  while (!waiters_.empty() && waiters_.front().first <= written_) {
    auto done = std::move(waiters_.front().second);
    waiters_.pop_front();
    done(error_code());
  }
}

void TabWriter::WhenWritten(absl::AnyInvocable<void(error_code)> done) {
  if (failed_) {
    return done(asio::error::broken_pipe);
  }
  if (written_ >= appended_) {
    return done(error_code());
  }
  waiters_.emplace_back(appended_, std::move(done));
}

void TabWriter::Abort() {
  Fail(boost::asio::error::connection_aborted);
  error_code ignored;
  socket_.close(ignored);  // after Teardown too
}

void TabWriter::Fail(error_code ec) {
  if (std::exchange(failed_, true)) {
    return;
  }
  error_code ignored;
  socket_.close(ignored);
  outbox_.clear();  // what is in flight stays until its write ends
  auto waiters = std::move(waiters_);
  waiters_.clear();
  for (auto& [target, fn] : waiters) {
    fn(ec);
  }
  owner_.OnTabWriterDone();
}

void TabWriter::CloseWith(uint16_t code, absl::string_view reason) {
  if (closing_ || failed_) {
    return;
  }
  Enqueue(CloseFrame(code, reason));
  closing_ = true;
  WhenWritten([this, owner = owner_.KeepAlive()](error_code ec) {
    if (!ec) {
      owner_.OnTabCloseSent();
    }
  });
}

void TabWriter::Teardown() {
  if (std::exchange(failed_, true)) {
    return;
  }
  // The tab reads what was written, then the end of the stream (RFC 6455 §7.1.1: the server
  // ends the TCP connection first). The socket stays open until the tab's end of stream
  // comes back (its owner then aborts): closing it with bytes unread would send a reset,
  // and the tab could lose our close frame.
  error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  outbox_.clear();
  waiters_.clear();
}

}  // namespace relay::gateway
