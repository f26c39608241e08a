#pragma once

#include <memory>
#include <variant>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "absl/container/inlined_vector.h"
#include "absl/functional/any_invocable.h"

namespace relay::gateway {

// Work that other threads hand to an I/O thread (the routers' commands, link
// ends and starts, revocations) goes through that thread's mailbox: it runs in
// the order it was handed over, and at most kSlice items at a time, so that
// the thread reads its sockets between slices. A link that comes back visits
// every tab of its shard, 9,500 on a full gateway: in one go that held every
// other call on the thread for 10 ms.
//
// While the links' thread hands out one batch of a router link, the work it
// posts is gathered and goes to each thread's mailbox when the batch is done:
// each thread is woken once per batch, not once per command.
//
// A link's return goes in a lane of its own, as one item per I/O thread that
// visits that thread's sessions of the shard, one session per unit of each
// turn's budget (FanOut): the thread takes it up after its calls' work, since a
// call handed over behind a link's 9,500 re-announcements would otherwise wait
// for all of them (17 ms). Nothing that overtakes it depends on it: the router
// sends nothing for a tab or stream until the re-announcement that the visit
// sends has reached it. (An item per session, as before, cost each one an
// allocation, a hand-over and four reference counts: half of the return's CPU.)
class GatheredPosts {
 public:
  // Items a thread runs before it turns to its sockets again.
  static constexpr size_t kSlice = 128;
  // Visits of a fan-out a thread makes in every turn, however many calls
  // wait: a link's return is never starved by a steady load.
  static constexpr size_t kFanOutFloor = 8;

  // Gathers on this thread until destroyed.
  GatheredPosts();
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

  // Calls visit(session) for each of sessions on the session's own thread
  // (T::executor()), in the fan-out lane: after the calls' work of each turn,
  // at least kFanOutFloor a turn, and after the fan-outs handed to the thread
  // before. Each session is let go once visited.
  template <typename T, typename Visit>
  static void FanOut(std::vector<std::shared_ptr<T>> sessions, Visit visit);

  // The fan-out lane's item: step is called once per unit of a turn's
  // budget until it returns true, then destroyed.
  static void PostSteps(const boost::asio::any_io_executor& executor, absl::AnyInvocable<bool()> step);

  using Once = absl::AnyInvocable<void()>;
  using Step = absl::AnyInvocable<bool()>;
  using Item = std::variant<Once, Step>;

 private:
  // The thread an executor runs on (its io_context), to group by.
  static const void* ThreadOf(const boost::asio::any_io_executor& executor);

  struct ForThread {
    boost::asio::any_io_executor executor;
    std::vector<Item> work;
  };
  absl::InlinedVector<ForThread, 2> threads_;
  GatheredPosts* outer_;
};

template <typename T, typename Visit>
void GatheredPosts::FanOut(std::vector<std::shared_ptr<T>> sessions, Visit visit) {
  struct Share {
    const void* thread;
    boost::asio::any_io_executor executor;
    std::vector<std::shared_ptr<T>> sessions;
  };
  absl::InlinedVector<Share, 2> shares;
  for (std::shared_ptr<T>& session : sessions) {
    boost::asio::any_io_executor executor = session->executor();
    const void* thread = ThreadOf(executor);
    Share* share = nullptr;
    for (Share& each : shares) {
      if (each.thread == thread) {
        share = &each;
        break;
      }
    }
    if (share == nullptr) {
      share = &shares.emplace_back(Share{thread, std::move(executor), {}});
    }
    share->sessions.push_back(std::move(session));
  }
  for (Share& share : shares) {
    PostSteps(share.executor,
              [sessions = std::move(share.sessions), next = size_t{0}, visit]() mutable {
                std::shared_ptr<T> session = std::move(sessions[next++]);
                visit(*session);
                return next == sessions.size();
              });
  }
}

}  // namespace relay::gateway
