#include "gateway/router_commands.h"

#include "gateway/http_session.h"
#include "gateway/tab_session.h"

namespace relay::gateway {

void RouterCommands::OnAccepted(uint64_t tab_id, uint32_t agents) {
  if (auto tab = tabs_.Find(tab_id)) {
    tab->PostAccepted(agents);
  }
}

void RouterCommands::OnDeliver(uint64_t tab_id, uint64_t call_id, std::string method,
                               std::string params) {
  // A tab that has left already sent its TabDown on the same link, so the
  // router fails the call; nothing to do here then.
  if (auto tab = tabs_.Find(tab_id)) {
    tab->PostDeliver(call_id, std::move(method), std::move(params));
  }
}

void RouterCommands::OnCancel(uint64_t tab_id, uint64_t call_id, std::string reason) {
  if (auto tab = tabs_.Find(tab_id)) {
    tab->PostCancel(call_id, std::move(reason));
  }
}

void RouterCommands::OnDisplace(uint64_t tab_id, std::string reason) {
  if (auto tab = tabs_.Find(tab_id)) {
    tab->PostDisplace(std::move(reason));
  }
}

void RouterCommands::OnAgents(uint64_t tab_id, uint32_t count) {
  if (auto tab = tabs_.Find(tab_id)) {
    tab->PostAgents(count);
  }
}

void RouterCommands::OnTabResponse(uint64_t tab_id, std::string tab_request_id, bool is_error,
                                   std::string payload) {
  if (auto tab = tabs_.Find(tab_id)) {
    tab->PostResponse(std::move(tab_request_id), is_error, std::move(payload));
  }
}

void RouterCommands::OnStreamEvent(uint64_t stream_id, uint64_t event_id, std::string message) {
  if (auto stream = streams_.Find(stream_id)) {
    stream->PostStreamEvent(event_id, std::move(message));
  }
}

void RouterCommands::OnSessionEnded(std::string session_id) {
  ended_.Add(session_id);
  // Its GET streams end too, wherever they are open.
  for (auto& stream : streams_.Snapshot()) {
    stream->PostSessionEnded(session_id);
  }
}

void RouterCommands::OnLinkDown(size_t shard) {
  for (auto& tab : tabs_.Snapshot()) {
    tab->PostLinkDown(shard);
  }
}

void RouterCommands::OnLinkUp(size_t shard) {
  if (router_.load() == nullptr) {
    return;  // still starting: there are no tabs or streams yet
  }
  for (auto& tab : tabs_.Snapshot()) {
    tab->PostReannounce(shard);
  }
  for (auto& stream : streams_.Snapshot()) {
    stream->PostReannounce(shard);
  }
}

}  // namespace relay::gateway
