#pragma once

#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "absl/container/inlined_vector.h"
#include "absl/functional/any_invocable.h"

namespace relay::gateway {

// While the links' thread hands out one batch of a router link, the work it
// posts to the I/O threads is gathered and goes as one handler per I/O thread
// when the batch is done: each thread is woken once per batch, not once per
// command, and runs the batch's work in the order it was posted.
class GatheredPosts {
 public:
  GatheredPosts();  // gathers on this thread until destroyed
  ~GatheredPosts();
  GatheredPosts(const GatheredPosts&) = delete;
  GatheredPosts& operator=(const GatheredPosts&) = delete;

  // Runs fn on executor's thread: at the end of the open GatheredPosts of
  // the calling thread, or posted at once when none is open.
  static void Post(const boost::asio::any_io_executor& executor, absl::AnyInvocable<void()> fn);

 private:
  struct ForThread {
    boost::asio::any_io_executor executor;
    std::vector<absl::AnyInvocable<void()>> work;
  };
  absl::InlinedVector<ForThread, 2> threads_;
  GatheredPosts* outer_;
};

}  // namespace relay::gateway
