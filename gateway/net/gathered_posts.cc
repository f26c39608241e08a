#include "gateway/net/gathered_posts.h"

#include <deque>
#include <utility>

#include <boost/asio/execution/context.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/query.hpp>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace relay::gateway {

namespace asio = boost::asio;

namespace {

using Work = std::vector<absl::AnyInvocable<void()>>;

thread_local GatheredPosts* open_posts = nullptr;

// One per io_context (an Asio service, so it lives as long as the context).
// Any thread appends; one drain handler at a time runs the work on the
// context's thread, a slice per handler.
class Mailbox final : public asio::execution_context::service {
 public:
  static asio::execution_context::id id;

  explicit Mailbox(asio::execution_context& context) : service(context) {}

  void Append(const asio::any_io_executor& executor, Work work) {
    {
      absl::MutexLock lock(&mu_);
      batches_.push_back(std::move(work));
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
  void shutdown() override {
    // The context is going: its work is dropped with it, as its handlers are.
    Work current = std::move(current_);
    std::deque<Work> batches;
    absl::MutexLock lock(&mu_);
    batches.swap(batches_);
  }

  void PostDrain() {
    asio::post(executor_, [this] { Drain(); });
  }

  // On the context's thread; draining_ makes it the only drain under way, so
  // current_ and next_ are its alone.
  void Drain() {
    for (size_t budget = GatheredPosts::kSlice; budget > 0; --budget) {
      while (next_ == current_.size()) {  // (a batch is never empty; if it were, the next)
        Work done;  // freed, outside the lock: a re-announcement's batch is large
        done.swap(current_);
        next_ = 0;
        absl::MutexLock lock(&mu_);
        if (batches_.empty()) {
          draining_ = false;
          return;
        }
        current_ = std::move(batches_.front());
        batches_.pop_front();
      }
      // May append to this mailbox (its own thread posting): not to current_.
      current_[next_++]();
    }
    PostDrain();  // the rest after the sockets that are ready meanwhile
  }

  absl::Mutex mu_;
  std::deque<Work> batches_ ABSL_GUARDED_BY(mu_);
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  asio::any_io_executor executor_;  // set with the first drain, before it is posted
  Work current_;
  size_t next_ = 0;
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
    MailboxOf(thread.executor).Append(thread.executor, std::move(thread.work));
  }
}

void GatheredPosts::PostNow(const asio::any_io_executor& executor, absl::AnyInvocable<void()> fn) {
  Work work;
  work.push_back(std::move(fn));
  MailboxOf(executor).Append(executor, std::move(work));
}

void GatheredPosts::Post(const asio::any_io_executor& executor, absl::AnyInvocable<void()> fn) {
  GatheredPosts* open = open_posts;
  if (open == nullptr) {
    return PostNow(executor, std::move(fn));
  }
  // One I/O thread per io_context: gathered by the context the executor runs on.
  auto& context = asio::query(executor, asio::execution::context);
  for (ForThread& thread : open->threads_) {
    if (&asio::query(thread.executor, asio::execution::context) == &context) {
      thread.work.push_back(std::move(fn));
      return;
    }
  }
  open->threads_.push_back({executor, {}});
  open->threads_.back().work.push_back(std::move(fn));
}

}  // namespace relay::gateway
