#include "gateway/net/gathered_posts.h"

#include <sched.h>

#include <algorithm>
#include <deque>
#include <utility>
#include <variant>

#include <boost/asio/execution/context.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/query.hpp>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace relay::gateway {

namespace asio = boost::asio;

namespace {

using Item = GatheredPosts::Item;
using Work = std::vector<Item>;

thread_local GatheredPosts* open_posts = nullptr;

enum class Lane {
  kCalls,   // in order with everything else the posting thread hands over
  kFanOut,  // after the calls' work waiting then, in order among fan-outs
};

// One per io_context (an Asio service, so it lives as long as the context).
// Any thread appends; one drain handler at a time runs the work on the
// context's thread, a slice per handler: the calls' lane first, then the
// fan-outs' visits in what is left of the slice (at least kFanOutFloor).
class Mailbox final : public asio::execution_context::service {
 public:
  static asio::execution_context::id id;

  explicit Mailbox(asio::execution_context& context) : service(context) {}

  void Append(const asio::any_io_executor& executor, Work work, Lane lane) {
    {
      absl::MutexLock lock(&mu_);
      Of(lane).queued.push_back(std::move(work));
      if (draining_) {
        return;  // the drain under way takes it in turn
      }
      draining_ = true;
      if (!executor_) {
        executor_ = executor;
      }
    }
    PostDrain();
  }

 private:
  struct Queue {
    std::deque<Work> queued;  // guarded by mu_
    // The drain's alone (draining_ makes it the only one under way).
    Work current;
    size_t next = 0;

    bool Exhausted() const { return next == current.size(); }
  };

  Queue& Of(Lane lane) { return lane == Lane::kCalls ? calls_ : fan_outs_; }

  void shutdown() override {
    // The context is going: its work is dropped with it, as its handlers are.
    std::deque<Work> dropped[2];
    Work current[2] = {std::move(calls_.current), std::move(fan_outs_.current)};
    absl::MutexLock lock(&mu_);
    dropped[0].swap(calls_.queued);
    dropped[1].swap(fan_outs_.queued);
  }

  void PostDrain() {
    asio::post(executor_, [this] { Drain(); });
  }

  // On the context's thread.
  void Drain() {
    size_t ran = RunFrom(calls_, GatheredPosts::kSlice);
    RunFrom(fan_outs_, std::max(GatheredPosts::kSlice - ran, GatheredPosts::kFanOutFloor));
    bool fanning_out;
    {
      absl::MutexLock lock(&mu_);
      fanning_out = !fan_outs_.Exhausted() || !fan_outs_.queued.empty();
      if (calls_.Exhausted() && calls_.queued.empty() && !fanning_out) {
        draining_ = false;
        return;
      }
    }
    if (fanning_out) {
      // A fan-out is background work: between its turns the thread lets the
      // host's other runnable processes go first. Under SCHED_BATCH (as the
      // services run on one host) a woken router shard does not preempt it,
      // and waited out its whole slice, milliseconds, with a call in hand.
      // With nothing else runnable this returns at once.
      sched_yield();
    }
    PostDrain();  // the rest after the sockets that are ready meanwhile
  }

  // Runs at most budget items of the queue, in order; how many ran.
  size_t RunFrom(Queue& queue, size_t budget) {
    size_t ran = 0;
    for (; ran < budget; ++ran) {
      while (queue.Exhausted()) {  // (a batch is never empty; if it were, the next)
        Work done;  // freed outside the lock: a re-announcement's batch is large
        done.swap(queue.current);
        queue.next = 0;
        absl::MutexLock lock(&mu_);
        if (queue.queued.empty()) {
          return ran;
        }
        queue.current = std::move(queue.queued.front());
        queue.queued.pop_front();
      }
      // Destroyed once run (a fan-out once its last visit is made): what it
      // holds (a session, a payload) goes now, not with the rest of its batch.
      // It may append to this mailbox (its own thread posting): not to current,
      // so the reference stays good while it runs.
      Item& item = queue.current[queue.next];
      if (auto* step = std::get_if<GatheredPosts::Step>(&item)) {
        if ((*step)()) {  // a fan-out's visit: it stays first until its last
          GatheredPosts::Step done = std::move(*step);
          ++queue.next;
        }
        continue;
      }
      GatheredPosts::Once once = std::move(std::get<GatheredPosts::Once>(item));
      ++queue.next;
      once();
    }
    return ran;
  }

  absl::Mutex mu_;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  asio::any_io_executor executor_;  // set with the first drain, before it is posted
  Queue calls_;
  Queue fan_outs_;
};

asio::execution_context::id Mailbox::id;

Mailbox& MailboxOf(const asio::any_io_executor& executor) {
  return asio::use_service<Mailbox>(asio::query(executor, asio::execution::context));
}

}  // namespace

GatheredPosts::GatheredPosts() : outer_(std::exchange(open_posts, this)) {}

GatheredPosts::~GatheredPosts() {
  open_posts = outer_;
  for (ForThread& thread : threads_) {
    MailboxOf(thread.executor).Append(thread.executor, std::move(thread.work), Lane::kCalls);
  }
}

void GatheredPosts::PostNow(const asio::any_io_executor& executor, absl::AnyInvocable<void()> fn) {
  Work work;
  work.emplace_back(std::move(fn));
  MailboxOf(executor).Append(executor, std::move(work), Lane::kCalls);
}

void GatheredPosts::PostSteps(const asio::any_io_executor& executor, absl::AnyInvocable<bool()> step) {
  Work work;
  work.emplace_back(std::move(step));
  MailboxOf(executor).Append(executor, std::move(work), Lane::kFanOut);
}

const void* GatheredPosts::ThreadOf(const asio::any_io_executor& executor) {
  return &asio::query(executor, asio::execution::context);
}

void GatheredPosts::Post(const asio::any_io_executor& executor, absl::AnyInvocable<void()> fn) {
  GatheredPosts* open = open_posts;
  if (open == nullptr) {
    return PostNow(executor, std::move(fn));
  }
  // One I/O thread per io_context: gathered by the context the executor runs on.
  const void* thread = ThreadOf(executor);
  for (ForThread& gathered : open->threads_) {
    if (ThreadOf(gathered.executor) == thread) {
      gathered.work.emplace_back(std::move(fn));
      return;
    }
  }
  open->threads_.push_back({executor, {}});
  open->threads_.back().work.emplace_back(std::move(fn));
}

}  // namespace relay::gateway
