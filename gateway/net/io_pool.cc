#include "gateway/net/io_pool.h"

#include <algorithm>
#include <memory>

#include <boost/asio/post.hpp>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "gateway/net/gathered_posts.h"

namespace relay::gateway {

namespace {

thread_local boost::asio::io_context* current = nullptr;

}  // namespace

IoPool::IoPool(int threads) {
  for (int i = 0; i < std::max(1, threads); ++i) {
    // Concurrency hint 1: one thread runs it (posts from other threads stay safe).
    contexts_.push_back(std::make_unique<boost::asio::io_context>(1));
    guards_.push_back(boost::asio::make_work_guard(*contexts_.back()));
  }
}

boost::asio::io_context& IoPool::Next() {
  return *contexts_[next_.fetch_add(1, std::memory_order_relaxed) % contexts_.size()];
}

boost::asio::io_context& IoPool::Current() {
  return current != nullptr ? *current : First();
}

void IoPool::Run() {
  for (auto& context : contexts_) {
    threads_.emplace_back([&io = *context] {
      current = &io;
      io.run();
    });
  }
}

bool IoPool::Settle(absl::Duration timeout) {
  struct Settling {
    absl::Mutex mu;
    size_t left ABSL_GUARDED_BY(mu);
  };
  auto settling = std::make_shared<Settling>();
  settling->left = contexts_.size();
  // A plain post to the first thread runs after its handler under way; the
  // mailboxes' items after everything handed to each thread before them.
  boost::asio::post(First(), [this, settling] {
    for (auto& context : contexts_) {
      GatheredPosts::Post(context->get_executor(), [settling] {
        absl::MutexLock lock(&settling->mu);
        --settling->left;
      });
    }
  });
  absl::MutexLock lock(&settling->mu);
  return settling->mu.AwaitWithTimeout(
      absl::Condition(+[](size_t* left) { return *left == 0; }, &settling->left), timeout);
}

void IoPool::Stop() {
  guards_.clear();
  for (auto& context : contexts_) {
    context->stop();
  }
  for (auto& thread : threads_) {
    thread.join();
  }
  threads_.clear();
}

}  // namespace relay::gateway
