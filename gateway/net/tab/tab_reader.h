#pragma once

#include <cstddef>
#include <memory>
#include <utility>

#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

#include "gateway/core/ws_frame.h"

namespace relay::gateway {

// The input side of a tab's WebSocket: waits until the socket has bytes
// (holding no buffer while the tab is idle), reads them into its thread's
// chunk, and passes them through the frame reader to its owner. Runs on its
// owner's I/O thread.
class TabReader {
 public:
  class Owner : public WsFrameReader::Visitor {
   public:
    // Held by the pending wait.
    virtual std::shared_ptr<void> KeepAlive() = 0;
    // The connection ended without a close frame: reset, end of stream, or
    // closed by us.
    virtual void OnTabReadEnded(boost::system::error_code ec) = 0;
  };

  TabReader(boost::asio::ip::tcp::socket& socket, Owner& owner, size_t limit);

  void Start();
  // The largest message, from the next message on.
  void SetLimit(size_t limit) { frames_.set_limit(limit); }
  // No bytes are read until Resume(): a tab that sends pings but never reads
  // its pongs waits for them to be written, so that they cannot pile up.
  void Hold() { held_ = true; }
  bool held() const { return held_; }
  void Resume();
  // Whether anything came since the last call (the keep-alive's sign of life).
  bool TakeHeard() { return std::exchange(heard_, false); }
  // The peer closed, or sent what ends the reading (what follows is read and
  // dropped until the end of the stream).
  bool done() const { return frames_.done(); }

 private:
  // Waits until the socket is readable.
  void Wait();
  // Reads again from a handler of its own, for bytes likely waiting.
  void ReadSoon();
  void OnReadable(boost::system::error_code ec);

  boost::asio::ip::tcp::socket& socket_;
  Owner& owner_;
  WsFrameReader frames_;
  bool waiting_ = false;
  bool held_ = false;
  bool heard_ = false;
};

}  // namespace relay::gateway
