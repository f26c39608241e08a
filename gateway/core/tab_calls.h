#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"

namespace relay::gateway {

// The calls one tab holds, by the relay's call id: those sent to it and not
// yet answered or cancelled, and those that came before its hello was
// answered, held until then (TAB-PROTOCOL.md: nothing is sent to a tab before
// its hello's answer). An answer is passed on only for a call in flight, a
// cancellation only told for one; a draining tab may close once it holds
// none. Plain C++, not thread-safe (the tab's I/O thread owns it).
class TabCalls {
 public:
  struct Call {
    uint64_t id = 0;
    std::string method;
    std::string params;  // JSON text
  };

  // Before the hello's answer: kept for Release.
  void Hold(Call call);
  // The held calls, in order: in flight from now on (the caller sends them).
  std::vector<Call> Release();
  // Sent to the tab.
  void Sent(uint64_t id, absl::string_view method);
  // The call ends (the tab's answer, or the relay gave it up): whether it was
  // in flight, with whether it is a tools/call; nothing when it was not (an
  // answer to a cancelled call is dropped).
  std::optional<bool> Finish(uint64_t id);
  // The relay gives the call up (the agent cancelled, its deadline passed):
  // one sent is ended (the tab must be told), one held is dropped unsent.
  enum class GivenUp { kNone, kWasSent, kWasHeld };
  GivenUp GiveUp(uint64_t id);
  // Every call ends (the gateway stops, the link to the account's shard went
  // down, the tab was displaced): the ids of those in flight, which the tab
  // must be told of; held ones are dropped unsent.
  std::vector<uint64_t> FinishAll();

  bool empty() const { return in_flight_.empty() && held_.empty(); }

 private:
  absl::flat_hash_map<uint64_t, bool> in_flight_;  // id -> is tools/call
  std::vector<Call> held_;
};

}  // namespace relay::gateway
