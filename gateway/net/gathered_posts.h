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
//
// A link's return (an item per tab and stream of its shard) goes in a lane of
// its own, which a thread takes up after its calls' work: a call handed over
// behind a link's 9,500 re-announcements would otherwise wait for all of them
// (17 ms). Nothing that overtakes such an item depends on it: the router
// sends nothing for a tab or stream until the re-announcement that the item
// sends has reached it.
class GatheredPosts {
 public:
  // Items a thread runs before it turns to its sockets again.
  static constexpr size_t kSlice = 128;
  // Items of a fan-out a thread runs in every turn, however many calls wait:
  // a link's return is never starved by a steady load.
  static constexpr size_t kFanOutFloor = 8;

  enum class Lane {
    kCalls,   // in order with everything else the posting thread hands over
    kFanOut,  // after the calls' work waiting then, in order among fan-outs;
              // for work nothing in the calls' lane can depend on
  };

  // Gathers on this thread until destroyed; a kFanOut scope's work goes to
  // the fan-out lane.
  explicit GatheredPosts(Lane lane = Lane::kCalls);
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
  Lane lane_;
  GatheredPosts* outer_;
};

}  // namespace relay::gateway
