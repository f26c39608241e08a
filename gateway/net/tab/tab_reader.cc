#include "gateway/net/tab/tab_reader.h"

#include <memory>
#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>

#include "absl/strings/string_view.h"

namespace relay::gateway {

namespace asio = boost::asio;

namespace {

// What one read takes: a thread's tabs share it, since a read is fed to the
// frame reader before the next one starts.
constexpr size_t kReadChunk = 64 * 1024;
// Reads per wake-up before the other connections of the thread get a turn.
constexpr int kMaxReadsPerWake = 4;

char* ReadChunk() {
  thread_local std::unique_ptr<char[]> chunk(new char[kReadChunk]);
  return chunk.get();
}

}  // namespace

TabReader::TabReader(asio::ip::tcp::socket& socket, Owner& owner, size_t limit)
    : socket_(socket), owner_(owner), frames_(limit) {}

void TabReader::Start() {
  boost::system::error_code ec;
  socket_.non_blocking(true, ec);
  Wait();
}

void TabReader::Resume() {
  held_ = false;
  ReadSoon();
}

void TabReader::Wait() {
  if (waiting_ || held_) {
    return;
  }
  waiting_ = true;
  socket_.async_wait(asio::ip::tcp::socket::wait_read,
                     [this, owner = owner_.KeepAlive()](boost::system::error_code ec) {
                       waiting_ = false;
                       OnReadable(ec);
                     });
}

void TabReader::ReadSoon() {
  if (waiting_ || held_) {
    return;
  }
  waiting_ = true;
  asio::post(socket_.get_executor(), [this, owner = owner_.KeepAlive()] {
    waiting_ = false;
    OnReadable({});
  });
}

void TabReader::OnReadable(boost::system::error_code ec) {
  if (ec) {
    return owner_.OnTabReadEnded(ec);
  }
  char* chunk = ReadChunk();
  for (int reads = 0; reads < kMaxReadsPerWake; ++reads) {
    if (held_) {
      return;  // Resume() reads on
    }
    size_t got = socket_.read_some(asio::buffer(chunk, kReadChunk), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
      return Wait();
    }
    if (ec) {
      return owner_.OnTabReadEnded(ec);
    }
    heard_ = true;
    // After the end (a close frame or bad input) what comes is read and dropped, so that
    // the tab's end of stream is seen and closing does not reset the connection.
    frames_.Feed(absl::string_view(chunk, got), owner_);
    if (got < kReadChunk) {
      return Wait();  // the socket is drained
    }
  }
  // Bytes are likely left: reading on from a handler of its own costs less than a wait
  // (an epoll_ctl), and gives the thread's other connections their turn first.
  ReadSoon();
}

}  // namespace relay::gateway
