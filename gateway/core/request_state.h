#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "gateway/core/sealed_json.h"

namespace relay::gateway {

// What a multi round-trip request's requestState says: which call at the
// router waits in the tab for the agent's answers, to which round of the
// tab's requests, for which account, and until when.
struct RequestState {
  std::string account;
  uint64_t call_id = 0;  // the router's id of the call
  uint32_t round = 0;    // 1 for the first input_required of the call
  std::vector<std::string> keys;  // the tab's request ids asked in the round
  // The request it answers: only a retry of the same method and name or URI,
  // with the same token, resumes the call.
  std::string method;
  std::string target;  // a digest of params.name or params.uri
  std::string token;   // the token's key (AgentHeaders::token_key)
  absl::Time expires;
};

// The relay's requestState values: "rs1.<payload>.<mac>" (SealedJson), so
// that the retry may reach any gateway. A client can read the payload (nothing
// secret is in it: no token, no tab content) but cannot change it or make one
// for another account's call.
class RequestStateSigner {
 public:
  explicit RequestStateSigner(absl::string_view secret);

  std::string Sign(const RequestState& state) const;

  // The state, or InvalidArgument for anything forged, malformed or of
  // another format, DeadlineExceeded when it has expired at now.
  absl::StatusOr<RequestState> Verify(absl::string_view text, absl::Time now) const;

 private:
  SealedJson sealed_;
};

}  // namespace relay::gateway
