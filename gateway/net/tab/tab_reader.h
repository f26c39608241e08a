#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include "gateway/net/tab/tab_transport.h"

namespace relay::gateway {

// The input side of a tab's WebSocket: whole text messages, read in chunks
// that start small (an idle tab holds little memory) and grow while a large
// message (a screenshot) comes in, each measured against a limit so that an
// oversized one is refused with the protocol's own close code rather than
// Beast's 1009. Runs on its owner's I/O thread.
class TabReader {
 public:
  class Owner {
   public:
    virtual ~Owner() = default;
    // Held by the pending read.
    virtual std::shared_ptr<void> KeepAlive() = 0;
    // A whole text message; the reader reads on unless Stop() was called.
    virtual void OnTabMessage(std::string text) = 0;
    // A message over the limit, or a binary one: no more is read.
    virtual void OnTabMessageTooBig() = 0;
    virtual void OnTabMessageBinary() = 0;
    // The connection ended (closed, reset, timed out, or closed by us).
    virtual void OnTabReadEnded(boost::beast::error_code ec) = 0;
  };

  TabReader(TabStream& ws, Owner& owner) : ws_(ws), owner_(owner) {}

  // Reads messages of at most limit bytes (SetLimit changes it between them).
  void Start(size_t limit);
  void SetLimit(size_t limit) { limit_ = limit; }
  // No further read is started (the connection is closing).
  void Stop() { stopped_ = true; }

 private:
  void DoRead();
  void OnRead(boost::beast::error_code ec, size_t bytes);

  TabStream& ws_;
  Owner& owner_;
  boost::beast::flat_buffer buffer_;
  size_t limit_ = 0;
  bool stopped_ = false;
};

}  // namespace relay::gateway
