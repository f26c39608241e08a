#include "common/scheduling.h"

#include <dirent.h>
#include <sched.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"

ABSL_FLAG(bool, sched_batch, false,
          "run every thread under SCHED_BATCH: a woken thread waits for the core's current one "
          "to sleep instead of taking its core. For a host where the relay's services share the "
          "cores among themselves (compose.yml sets it): fewer context switches a call. Leave off "
          "where CPU-bound work shares the cores: the relay's wake-ups would wait up to a "
          "scheduler tick behind it (docs/operations.md)");

namespace relay::common {

absl::StatusOr<int> RunAsBatch() {
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) {
    return absl::InternalError(absl::StrCat("/proc/self/task: ", std::strerror(errno)));
  }
  const sched_param param{.sched_priority = 0};
  int set = 0;
  absl::Status status;  // the first failure; the threads before it stay set (see the header)
  for (;;) {
    errno = 0;
    const dirent* entry = readdir(tasks);
    if (entry == nullptr) {
      if (errno != 0) {
        status = absl::InternalError(absl::StrCat("/proc/self/task: ", std::strerror(errno)));
      }
      break;
    }
    char* end = nullptr;
    const long tid = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0') {
      continue;  // "." and ".."
    }
    if (sched_setscheduler(static_cast<pid_t>(tid), SCHED_BATCH, &param) != 0) {
      const int error = errno;
      if (error == ESRCH) {
        continue;  // the thread ended after it was listed
      }
      const std::string why =
          absl::StrCat("sched_setscheduler(SCHED_BATCH): ", std::strerror(error));
      status = error == EPERM ? absl::PermissionDeniedError(why) : absl::InternalError(why);
      break;
    }
    ++set;
  }
  closedir(tasks);
  if (!status.ok()) {
    return status;
  }
  return set;
}

void ApplySchedulingFlagAndLog() {
  if (!absl::GetFlag(FLAGS_sched_batch)) {
    return;
  }
  absl::StatusOr<int> threads = RunAsBatch();
  if (!threads.ok()) {
    LogWarn("--sched_batch not applied: runs under the default policy",
            {{"error", threads.status().message()}});
    return;
  }
  LogInfo("runs under SCHED_BATCH (--sched_batch)", {{"threads", *threads}});
}

}  // namespace relay::common
