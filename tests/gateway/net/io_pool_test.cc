#include "gateway/net/io_pool.h"

#include <atomic>

#include <boost/asio/post.hpp>
#include <gtest/gtest.h>

#include "absl/synchronization/notification.h"
#include "gateway/net/gathered_posts.h"

namespace relay::gateway {
namespace {

// A gateway that drains must not exit before an answered call's answer is
// handed to its connection: the links' thread (the first I/O thread) takes the
// outcome within a batch and hands it over when the batch is done.
TEST(IoPoolTest, SettleWaitsForWhatTheFirstThreadsBatchHandsOver) {
  IoPool pool(2);
  pool.Run();
  absl::Notification batch_open;
  absl::Notification never;
  std::atomic<bool> answered{false};
  auto& links_thread = pool.Next();   // the first
  auto& agents_thread = pool.Next();  // the second: the agent's connection
  ASSERT_NE(&links_thread, &agents_thread);
  boost::asio::post(links_thread, [&] {
    GatheredPosts batch;  // a link batch under way, which takes its time
    // The answer's hand-over, which takes its time too: Settle must wait for it
    // to end, not only for the batch.
    GatheredPosts::Post(agents_thread.get_executor(), [&] {
      never.WaitForNotificationWithTimeout(absl::Milliseconds(50));
      answered = true;
    });
    batch_open.Notify();
    never.WaitForNotificationWithTimeout(absl::Milliseconds(100));
  });
  batch_open.WaitForNotification();
  EXPECT_FALSE(answered.load());  // nothing handed over while the batch is open
  EXPECT_TRUE(pool.Settle(absl::Seconds(10)));
  EXPECT_TRUE(answered.load());  // run before Settle returned
  pool.Stop();
}

TEST(IoPoolTest, SettleGivesUpWhenAThreadIsHeld) {
  IoPool pool(1);
  pool.Run();
  absl::Notification release;
  boost::asio::post(pool.First(), [&] { release.WaitForNotification(); });
  EXPECT_FALSE(pool.Settle(absl::Milliseconds(50)));
  release.Notify();
  pool.Stop();
}

}  // namespace
}  // namespace relay::gateway
