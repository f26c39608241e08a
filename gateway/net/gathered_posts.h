#pragma once

#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "absl/container/inlined_vector.h"
#include "absl/functional/any_invocable.h"

namespace relay::gateway {

// Work that other threads hand to an I/O thread (the routers' commands, link
// ends and starts, revocations) goes through that thread's mailbox: it runs in
// the order it was handed over, and at most kSlice items at a time, so that
// the thread reads its sockets between slices. A link that comes back makes
// one item per tab of its shard, 19,000 on a full gateway: run in one go they
// held every other call on the thread for 10 ms.
//
// While the links' thread hands out one batch of a router link, the work it
// posts is gathered and goes to each thread's mailbox when the batch is done:
// each thread is woken once per batch, not once per command.
class GatheredPosts {
 public:
  // Items a thread runs before it turns to its sockets again.
  static constexpr size_t kSlice = 128;

  GatheredPosts();  // gathers on this thread until destroyed
  ~GatheredPosts();
  GatheredPosts(const GatheredPosts&) = delete;
  GatheredPosts& operator=(const GatheredPosts&) = delete;

  // Runs fn on executor's thread, after everything handed to that thread
  // before it: at the end of the open GatheredPosts of the calling thread, or
  // at once when none is open. One I/O thread per io_context.
  static void Post(const boost::asio::any_io_executor& executor, absl::AnyInvocable<void()> fn);
  // The same, but at once even while a GatheredPosts is open on this thread:
  // for work that other work handed over meanwhile must not overtake (a
  // call's event, which a cancel on the call's own thread may follow with
  // the call's end before the batch is done).
  static void PostNow(const boost::asio::any_io_executor& executor, absl::AnyInvocable<void()> fn);

 private:
  struct ForThread {
    boost::asio::any_io_executor executor;
    std::vector<absl::AnyInvocable<void()>> work;
  };
  absl::InlinedVector<ForThread, 2> threads_;
  GatheredPosts* outer_;
};

}  // namespace relay::gateway
