#pragma once

// The few absl::Status matchers GoogleTest lacks in this Abseil version.

#include <ostream>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"

namespace relay::testing {

inline const absl::Status& GetStatus(const absl::Status& status) { return status; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

MATCHER(IsOk, "is OK") {
  const absl::Status& status = GetStatus(arg);
  *result_listener << "status is " << status.ToString();
  return status.ok();
}

MATCHER_P(StatusIs, code, "has status code " + absl::StatusCodeToString(code)) {
  const absl::Status& status = GetStatus(arg);
  *result_listener << "status is " << status.ToString();
  return status.code() == code;
}

}  // namespace relay::testing
