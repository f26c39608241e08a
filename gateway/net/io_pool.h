#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "absl/time/time.h"

namespace relay::gateway {

// The gateway's I/O threads: one io_context each. A connection lives on one
// of them from accept to close, so its handlers never run on two threads at
// once and need no strand, and its work never waits for another I/O thread
// to be woken (only its start is handed over from the accepting thread).
// Connections are dealt out in turn and never moved.
class IoPool {
 public:
  explicit IoPool(int threads);
  ~IoPool() { Stop(); }
  IoPool(const IoPool&) = delete;
  IoPool& operator=(const IoPool&) = delete;

  // For a new connection.
  boost::asio::io_context& Next();
  boost::asio::io_context& First() { return *contexts_.front(); }
  // The calling I/O thread's own, or the first one on any other thread.
  boost::asio::io_context& Current();

  void Run();
  // From a thread not the pool's (shutdown): waits at most timeout until every
  // I/O thread has run what was handed to it before now, including what the
  // first thread's handler under way hands over (the links run there and hand
  // a batch's work over when the batch is done). False when the time ran out.
  bool Settle(absl::Duration timeout);
  // Stops every io_context and joins the threads.
  void Stop();

 private:
  using Guard = boost::asio::executor_work_guard<boost::asio::io_context::executor_type>;
  std::vector<std::unique_ptr<boost::asio::io_context>> contexts_;
  // Each thread runs until Stop, even while its context has no connection.
  std::vector<Guard> guards_;
  std::vector<std::thread> threads_;
  std::atomic<size_t> next_{0};
};

}  // namespace relay::gateway
