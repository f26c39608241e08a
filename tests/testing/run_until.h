#pragma once

#include <chrono>

#include <boost/asio/io_context.hpp>

namespace relay::testing {

// Runs io one handler at a time until done() holds or a deadline far beyond what the work needs
// (reaching it is a failure, not a timing). Returns done().
template <typename Done>
bool RunUntil(boost::asio::io_context& io, Done done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    io.restart();  // a run that ran out of work left it stopped
    io.run_one_for(std::chrono::milliseconds(100));
  }
  return done();
}

}  // namespace relay::testing
