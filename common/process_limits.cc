#include "common/process_limits.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace relay::common {

absl::StatusOr<OpenFileLimit> RaiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return absl::InternalError(absl::StrCat("getrlimit(RLIMIT_NOFILE): ", std::strerror(errno)));
  }
  OpenFileLimit result{.before = limit.rlim_cur, .now = limit.rlim_cur, .hard = limit.rlim_max};
  if (limit.rlim_cur == limit.rlim_max) {
    return result;
  }
  limit.rlim_cur = limit.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return absl::InternalError(absl::StrCat("setrlimit(RLIMIT_NOFILE): ", std::strerror(errno)));
  }
  result.now = limit.rlim_max;
  return result;
}

void RaiseOpenFileLimitAndLog() {
  absl::StatusOr<OpenFileLimit> limit = RaiseOpenFileLimit();
  if (!limit.ok()) {
    LogWarn("open-file limit not raised", {{"error", limit.status().message()}});
    return;
  }
  LogInfo(limit->now == limit->before ? "open-file limit" : "open-file limit raised to the hard limit",
          {{"soft_before", limit->before}, {"soft", limit->now}, {"hard", limit->hard}});
}

}  // namespace relay::common
