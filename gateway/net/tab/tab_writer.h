#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

#include "absl/functional/any_invocable.h"
#include "absl/strings/string_view.h"
#include "common/fifo.h"

namespace relay::gateway {

// The output side of a tab's WebSocket: one queue of bytes, in order (the
// upgrade's answer, text messages, pongs, pings, the close frame), written
// with one gathered write for everything queued meanwhile (the deliveries of
// one link batch leave in one system call); bounded; nothing after the close
// frame. Runs on its owner's I/O thread.
class TabWriter final {
 public:
  class Owner {
   public:
    virtual ~Owner() = default;
    // Held by every pending write.
    virtual std::shared_ptr<void> KeepAlive() = 0;
    // The connection is over: a write failed, or the tab did not read what it
    // was sent (the socket is closed).
    virtual void OnTabWriterDone() = 0;
    // The close frame is written.
    virtual void OnTabCloseSent() = 0;
    // A write is done: the entries up to `written` (numbered as appended()
    // numbers them) are in the socket. Before any waiter of WhenWritten runs.
    virtual void OnTabWritten(uint64_t written) {}
  };

  TabWriter(boost::asio::ip::tcp::socket& socket, Owner& owner, size_t max_queued_bytes);

  // Bytes as they are (the upgrade's answer, a control frame).
  void SendRaw(std::string bytes);
  // One text message, framed.
  void Send(std::string text);
  // Queues the close frame after everything queued; the first close wins.
  void CloseWith(uint16_t code, absl::string_view reason);
  bool closing() const { return closing_; }
  // done runs once everything queued so far has been written, or the
  // connection has failed (with its error).
  void WhenWritten(absl::AnyInvocable<void(boost::system::error_code)> done);
  // The entries queued so far: the last one's number, for OnTabWritten.
  uint64_t appended() const { return appended_; }
  // The tab is gone without closing (or its end of stream came after a
  // Teardown): drop what waits and close the socket, so that a write it will
  // never take ends now.
  void Abort();
  // The closing handshake is over: the socket is shut for sending (what was
  // written still reaches the tab); it is closed by Abort once the tab's end
  // of stream is read, or the closing deadline passes.
  void Teardown();

 private:
  // False (and the connection dropped) when the tab holds too much unwritten.
  bool Enqueue(std::string bytes);
  void ScheduleWrite();
  void DoWrite();
  void OnWrite(boost::system::error_code ec);
  void Fail(boost::system::error_code ec);

  boost::asio::ip::tcp::socket& socket_;
  Owner& owner_;
  const size_t max_queued_bytes_;
  common::Fifo<std::string> outbox_;
  common::Fifo<std::string> in_flight_;  // the entries of the write in flight
  size_t queued_bytes_ = 0;  // outbox_ and in_flight_
  bool write_scheduled_ = false;
  bool failed_ = false;
  bool closing_ = false;
  uint64_t appended_ = 0;  // entries ever queued
  uint64_t written_ = 0;   // entries ever written
  // Each waits for the entries queued when it asked: {appended_ then, done},
  // in the order they asked (so by that count too).
  common::Fifo<std::pair<uint64_t, absl::AnyInvocable<void(boost::system::error_code)>>> waiters_;
};

}  // namespace relay::gateway
