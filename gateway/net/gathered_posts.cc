#include "gateway/net/gathered_posts.h"

#include <utility>

#include <boost/asio/execution/context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/query.hpp>

namespace relay::gateway {

namespace asio = boost::asio;

namespace {

thread_local GatheredPosts* open_posts = nullptr;

}  // namespace

GatheredPosts::GatheredPosts() : outer_(std::exchange(open_posts, this)) {}

GatheredPosts::~GatheredPosts() {
  open_posts = outer_;
  for (ForThread& thread : threads_) {
    asio::post(thread.executor, [work = std::move(thread.work)]() mutable {
      for (auto& fn : work) {
        fn();
      }
    });
  }
}

void GatheredPosts::Post(const asio::any_io_executor& executor, absl::AnyInvocable<void()> fn) {
  GatheredPosts* open = open_posts;
  if (open == nullptr) {
    asio::post(executor, std::move(fn));
    return;
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
