#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include "absl/functional/any_invocable.h"
#include "absl/strings/string_view.h"
#include "common/fifo.h"
#include "gateway/net/tab/tab_transport.h"

namespace relay::gateway {

// The output side of a tab's WebSocket: one queue of bytes, in order, for the
// text messages it encodes itself and for Beast's own frames (TabTransport),
// written with one gathered write for everything queued meanwhile (the
// deliveries of one link batch leave in one system call); bounded; the close
// frame after what was queued before it. Runs on its owner's I/O thread.
class TabWriter final : public TabOutput {
 public:
  class Owner {
   public:
    virtual ~Owner() = default;
    // Held by every pending write and the close.
    virtual std::shared_ptr<void> KeepAlive() = 0;
    // The connection is over: a write failed, the tab did not read what it was
    // sent (the socket is closed), or the closing handshake ended.
    virtual void OnTabWriterDone() = 0;
  };

  TabWriter(TabStream& ws, Owner& owner, size_t max_queued_bytes);

  // Nothing is sent once a close was asked for or the WebSocket is closing.
  void Send(std::string text);
  // Closes with code once everything queued is written; the first close wins.
  void CloseWith(uint16_t code, absl::string_view reason);
  bool closing() const { return close_.has_value(); }
  // The tab is gone without closing: drop what waits and close the socket,
  // so that a write it will never take ends now.
  void Abort();

  // TabOutput.
  bool AppendRaw(std::string bytes) override;
  void WhenWritten(absl::AnyInvocable<void(boost::beast::error_code)> done) override;

 private:
  // False (and the connection dropped) when the tab holds too much unwritten.
  bool Enqueue(std::string bytes);
  void ScheduleWrite();
  void DoWrite();
  void OnWrite(boost::beast::error_code ec);
  void Fail(boost::beast::error_code ec);
  void StartClose();

  TabStream& ws_;
  Owner& owner_;
  const size_t max_queued_bytes_;
  common::Fifo<std::string> outbox_;
  common::Fifo<std::string> in_flight_;  // the entries of the write in flight
  size_t queued_bytes_ = 0;  // outbox_ and in_flight_
  bool write_scheduled_ = false;
  bool failed_ = false;
  uint64_t appended_ = 0;  // entries ever queued
  uint64_t written_ = 0;   // entries ever written
  // Each waits for the entries queued when it asked: {appended_ then, done},
  // in the order they asked (so by that count too).
  common::Fifo<std::pair<uint64_t, absl::AnyInvocable<void(boost::beast::error_code)>>> waiters_;
  std::optional<boost::beast::websocket::close_reason> close_;
  bool close_started_ = false;
};

}  // namespace relay::gateway
