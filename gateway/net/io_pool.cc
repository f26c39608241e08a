#include "gateway/net/io_pool.h"

#include <algorithm>

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
