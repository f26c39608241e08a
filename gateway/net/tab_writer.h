#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include "absl/strings/string_view.h"

namespace relay::gateway {

// The output side of a tab's WebSocket: text messages one write at a time in
// order, bounded, then the close frame after what was queued before it. Runs
// on its owner's I/O thread.
class TabWriter {
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

  using Stream = boost::beast::websocket::stream<boost::beast::tcp_stream>;
  TabWriter(Stream& ws, Owner& owner, size_t max_queued_bytes);

  // Nothing is sent once a close was asked for.
  void Send(std::string text);
  // Closes with code once everything queued is written; the first close wins.
  void CloseWith(uint16_t code, absl::string_view reason);
  bool closing() const { return close_.has_value(); }

 private:
  void DoWrite();
  void OnWrite(boost::beast::error_code ec);
  void StartClose();

  Stream& ws_;
  Owner& owner_;
  const size_t max_queued_bytes_;
  std::deque<std::string> outbox_;
  size_t queued_bytes_ = 0;
  bool writing_ = false;
  std::optional<boost::beast::websocket::close_reason> close_;
  bool close_started_ = false;
};

}  // namespace relay::gateway
