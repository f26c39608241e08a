#include "gateway/net/tab/tab_reader.h"

#include <memory>
#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>

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
  Wait();
}

void TabReader::Wait() {
  if (waiting_ || held_ || frames_.done()) {
    return;
  }
  waiting_ = true;
  socket_.async_wait(asio::ip::tcp::socket::wait_read,
                     [this, owner = owner_.KeepAlive()](boost::system::error_code ec) {
                       waiting_ = false;
                       OnReadable(ec);
                     });
}

void TabReader::OnReadable(boost::system::error_code ec) {
  if (ec) {
    return owner_.OnTabReadEnded(ec);
  }
  char* chunk = ReadChunk();
  for (int reads = 0; reads < kMaxReadsPerWake && !held_ && !frames_.done(); ++reads) {
    size_t got = socket_.read_some(asio::buffer(chunk, kReadChunk), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
      break;
    }
    if (ec) {
      return owner_.OnTabReadEnded(ec);
    }
    heard_ = true;
    frames_.Feed(absl::string_view(chunk, got), owner_);
    if (got < kReadChunk) {
      break;  // the socket is drained
    }
  }
  Wait();
}

}  // namespace relay::gateway
