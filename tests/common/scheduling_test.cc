#include "common/scheduling.h"

#include <sched.h>

#include <thread>

#include "absl/cleanup/cleanup.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace relay::common {
namespace {

TEST(RunAsBatch, SetsEveryThreadAlreadyRunningAndThoseStartedAfter) {
  // From the default policy, whatever this runner was started under (chrt -b, a unit file).
  const sched_param param{.sched_priority = 0};
  if (sched_setscheduler(0, SCHED_OTHER, &param) != 0) {
    GTEST_SKIP() << "this runner may not leave its scheduling policy";
  }
  // A thread already running when it is called: it must be set too, not only the caller.
  absl::Notification set, checked;
  int earlier_policy = -1;
  std::thread earlier([&] {
    set.WaitForNotification();
    earlier_policy = sched_getscheduler(0);
    checked.Notify();
  });
  // However the test ends, the thread is let go and joined, and the policy put back.
  absl::Cleanup restore = [&] {
    if (!set.HasBeenNotified()) {
      set.Notify();
    }
    earlier.join();
    sched_setscheduler(0, SCHED_OTHER, &param);
  };
  ASSERT_EQ(sched_getscheduler(0), SCHED_OTHER);

  absl::StatusOr<int> threads = RunAsBatch();
  ASSERT_TRUE(threads.ok()) << threads.status();
  EXPECT_GE(*threads, 2);  // this one and `earlier`
  EXPECT_EQ(sched_getscheduler(0), SCHED_BATCH);
  set.Notify();
  checked.WaitForNotification();
  EXPECT_EQ(earlier_policy, SCHED_BATCH);

  int later_policy = -1;
  std::thread later([&] { later_policy = sched_getscheduler(0); });
  later.join();
  EXPECT_EQ(later_policy, SCHED_BATCH);
}

}  // namespace
}  // namespace relay::common
