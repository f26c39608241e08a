#include "router/core/kept_answers.h"

#include <utility>

namespace relay::router {

void KeptAnswers::Keep(uint64_t call_id, Answer answer) {
  if (answer.payload.size() > max_bytes_) {
    return;  // the retry hears "no longer pending", as before
  }
  Drop(call_id);
  bytes_ += answer.payload.size();
  answers_.emplace(call_id, std::move(answer));
  order_.push_back(call_id);
  while (answers_.size() > max_answers_ || bytes_ > max_bytes_) {
    uint64_t oldest = order_.front();
    order_.pop_front();
    Drop(oldest);
  }
  // Taken answers leave their ids behind: keep the queue near the map's size
  // (one long-lived answer at its front must not let it grow for its TTL).
  if (order_.size() > 2 * answers_.size() + 16) {
    std::erase_if(order_, [this](uint64_t id) { return !answers_.contains(id); });
  }
  while (!order_.empty() && !answers_.contains(order_.front())) {
    order_.pop_front();
  }
}

std::optional<KeptAnswers::Answer> KeptAnswers::Take(uint64_t call_id, const std::string& account,
                                                     absl::Time now) {
  auto it = answers_.find(call_id);
  // Another account's retry is answered as if nothing were kept.
  if (it == answers_.end() || it->second.account != account || it->second.until <= now) {
    return std::nullopt;
  }
  Answer answer = std::move(it->second);
  bytes_ -= answer.payload.size();
  answers_.erase(it);
  return answer;
}

void KeptAnswers::Expire(absl::Time now) {
  absl::erase_if(answers_, [&](const auto& entry) {
    if (entry.second.until > now) {
      return false;
    }
    bytes_ -= entry.second.payload.size();
    return true;
  });
  while (!order_.empty() && !answers_.contains(order_.front())) {
    order_.pop_front();
  }
}

void KeptAnswers::Drop(uint64_t call_id) {
  auto it = answers_.find(call_id);
  if (it != answers_.end()) {
    bytes_ -= it->second.payload.size();
    answers_.erase(it);
  }
}

}  // namespace relay::router
