#include "gateway/core/tab_calls.h"

#include <algorithm>
#include <utility>

namespace relay::gateway {

void TabCalls::Hold(Call call) {
  held_.push_back(std::move(call));
}

std::vector<TabCalls::Call> TabCalls::Release() {
  std::vector<Call> released = std::exchange(held_, {});
  for (const Call& call : released) {
    Sent(call.id, call.method);
  }
  return released;
}

void TabCalls::Sent(uint64_t id, absl::string_view method) {
  in_flight_.emplace(id, method == "tools/call");
}

std::optional<bool> TabCalls::Finish(uint64_t id) {
  auto it = in_flight_.find(id);
  if (it == in_flight_.end()) {
    return std::nullopt;
  }
  bool is_tool_call = it->second;
  in_flight_.erase(it);
  return is_tool_call;
}

TabCalls::GivenUp TabCalls::GiveUp(uint64_t id) {
  if (Finish(id)) {
    return GivenUp::kWasSent;
  }
  auto held = std::find_if(held_.begin(), held_.end(), [id](const Call& c) { return c.id == id; });
  if (held == held_.end()) {
    return GivenUp::kNone;
  }
  held_.erase(held);
  return GivenUp::kWasHeld;
}

std::vector<uint64_t> TabCalls::FinishAll() {
  std::vector<uint64_t> ids;
  ids.reserve(in_flight_.size());
  for (const auto& [id, is_tool_call] : in_flight_) {
    ids.push_back(id);
  }
  in_flight_.clear();
  held_.clear();  // never sent: nothing to tell the tab
  return ids;
}

}  // namespace relay::gateway
