#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include "absl/functional/any_invocable.h"

namespace relay::gateway {

// Where a tab's bytes leave: its TabWriter's queue, written with one
// gathered write.
class TabOutput {
 public:
  // Queues bytes Beast wrote (the handshake's answer, a ping, a pong, the
  // close frame) after everything queued before; false once the connection
  // is done.
  virtual bool AppendRaw(std::string bytes) = 0;
  // done runs once everything queued so far has been written, or the
  // connection has failed (with its error).
  virtual void WhenWritten(absl::AnyInvocable<void(boost::beast::error_code)> done) = 0;

 protected:
  ~TabOutput() = default;
};

// The stream under a tab's websocket::stream. Reads come from the socket;
// writes are only appended to the tab's output queue. So Beast's own frames
// and the data frames TabWriter encodes leave in one order, never
// interleaved (Beast answers pings and closes by itself), and all the
// messages one batch delivers to a tab go in one system call.
class TabTransport {
 public:
  using executor_type = boost::beast::tcp_stream::executor_type;

  explicit TabTransport(boost::beast::tcp_stream&& stream) : stream_(std::move(stream)) {}

  void set_output(TabOutput* output) { output_ = output; }
  executor_type get_executor() noexcept { return stream_.get_executor(); }
  boost::beast::tcp_stream& next_layer() { return stream_; }
  const boost::beast::tcp_stream& next_layer() const { return stream_; }

  template <class MutableBufferSequence, class ReadToken>
  auto async_read_some(const MutableBufferSequence& buffers, ReadToken&& token) {
    return stream_.async_read_some(buffers, std::forward<ReadToken>(token));
  }

  // Copies the bytes into the output queue and completes once they are
  // written: Beast waits for its pong before it reads on, as it did on the
  // socket, so a tab that sends pings but never reads cannot pile them up.
  template <class ConstBufferSequence, class WriteToken>
  auto async_write_some(const ConstBufferSequence& buffers, WriteToken&& token) {
    return boost::asio::async_initiate<WriteToken, void(boost::beast::error_code, size_t)>(
        [this](auto handler, const ConstBufferSequence& buffers) {
          size_t size = boost::asio::buffer_size(buffers);
          std::string bytes(size, '\0');
          boost::asio::buffer_copy(boost::asio::buffer(bytes), buffers);
          auto executor = boost::asio::get_associated_executor(handler, get_executor());
          if (output_ == nullptr || !output_->AppendRaw(std::move(bytes))) {
            return boost::asio::post(
                executor, boost::beast::bind_front_handler(
                              std::move(handler),
                              boost::beast::error_code(boost::asio::error::broken_pipe), 0));
          }
          output_->WhenWritten([executor, size, handler = std::move(handler)](
                                   boost::beast::error_code ec) mutable {
            boost::asio::post(executor, boost::beast::bind_front_handler(std::move(handler), ec,
                                                                         ec ? 0 : size));
          });
        },
        token, buffers);
  }

  // Beast's closing handshake ends with a teardown: the socket is shut only
  // once what was queued before (the close frame) has been written.
  template <class TeardownHandler>
  friend void async_teardown(boost::beast::role_type role, TabTransport& transport,
                             TeardownHandler&& handler) {
    if (transport.output_ == nullptr) {
      return TeardownSocket(role, transport.stream_, std::forward<TeardownHandler>(handler));
    }
    transport.output_->WhenWritten(
        [role, &stream = transport.stream_,
         handler = std::forward<TeardownHandler>(handler)](boost::beast::error_code ec) mutable {
          if (ec) {
            auto executor = boost::asio::get_associated_executor(handler, stream.get_executor());
            return boost::asio::post(executor,
                                     boost::beast::bind_front_handler(std::move(handler), ec));
          }
          TeardownSocket(role, stream, std::move(handler));
        });
  }

 private:
  template <class TeardownHandler>
  static void TeardownSocket(boost::beast::role_type role, boost::beast::tcp_stream& stream,
                             TeardownHandler&& handler) {
    using boost::beast::websocket::async_teardown;
    async_teardown(role, stream.socket(), std::forward<TeardownHandler>(handler));
  }

  boost::beast::tcp_stream stream_;
  TabOutput* output_ = nullptr;
};

// The stream a tab's connection is.
using TabStream = boost::beast::websocket::stream<TabTransport>;

}  // namespace relay::gateway
