#include "common/process_limits.h"

#include <sys/resource.h>

#include <algorithm>
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

uint64_t RaiseOpenFileLimitAndLog() {
  absl::StatusOr<OpenFileLimit> limit = RaiseOpenFileLimit();
  if (!limit.ok()) {
    LogWarn("open-file limit not raised", {{"error", limit.status().message()}});
    rlimit current{};
    return getrlimit(RLIMIT_NOFILE, &current) == 0 ? current.rlim_cur : 0;
  }
  LogInfo(limit->now == limit->before ? "open-file limit" : "open-file limit raised to the hard limit",
          {{"soft_before", limit->before}, {"soft", limit->now}, {"hard", limit->hard}});
  return limit->now;
}

int64_t ConnectionsWithin(uint64_t descriptor_limit) {
  // No limit known (0), RLIM_INFINITY and the like: more than any count compared with it; the
  // accept loop's backoff is then what holds.
  const uint64_t limit = descriptor_limit == 0
                             ? uint64_t{1} << 40
                             : std::min<uint64_t>(descriptor_limit, uint64_t{1} << 40);
  const uint64_t reserve = std::min<uint64_t>(kReservedDescriptors, limit / 4);
  return static_cast<int64_t>(std::max<uint64_t>(1, limit - reserve));
}

}  // namespace relay::common
