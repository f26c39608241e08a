#include "common/scheduling.h"

#include <sched.h>

#include <thread>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace relay::common {
namespace {

TEST(RunAsBatch, SetsEveryThreadAlreadyRunningAndThoseStartedAfter) {
  // A thread started before, as gRPC's and the I/O pool's may be: it must be set too.
  absl::Notification set, checked;
  int earlier_policy = -1;
  std::thread earlier([&] {
    set.WaitForNotification();
    earlier_policy = sched_getscheduler(0);
    checked.Notify();
  });
  ASSERT_EQ(sched_getscheduler(0), SCHED_OTHER);

  absl::StatusOr<int> threads = RunAsBatch();
  ASSERT_TRUE(threads.ok()) << threads.status();
  EXPECT_GE(*threads, 2);  // this one and `earlier`
  EXPECT_EQ(sched_getscheduler(0), SCHED_BATCH);
  set.Notify();
  checked.WaitForNotification();
  earlier.join();
  EXPECT_EQ(earlier_policy, SCHED_BATCH);

  int later_policy = -1;
  std::thread later([&] { later_policy = sched_getscheduler(0); });
  later.join();
  EXPECT_EQ(later_policy, SCHED_BATCH);

  // Back to the default for the rest of this process's tests.
  const sched_param param{.sched_priority = 0};
  ASSERT_EQ(sched_setscheduler(0, SCHED_OTHER, &param), 0);
}

}  // namespace
}  // namespace relay::common
