#pragma once

#include <atomic>

#include "gateway/registry.h"
#include "gateway/router_client.h"
#include "gateway/session_state.h"

namespace relay::gateway {

class HttpSession;
class TabSession;

// Receives the routers' commands (on gRPC threads) and posts each to the
// strand of the tab or stream it is for.
class RouterCommands final : public TabCommandSink {
 public:
  RouterCommands(Registry<TabSession>& tabs, Registry<HttpSession>& streams,
                 EndedSessions& ended)
      : tabs_(tabs), streams_(streams), ended_(ended) {}

  void SetRouter(RouterClient* router) { router_.store(router); }

  void OnAccepted(uint64_t tab_id, uint32_t agents) override;
  void OnDeliver(uint64_t tab_id, uint64_t call_id, std::string method,
                 std::string params) override;
  void OnCancel(uint64_t tab_id, uint64_t call_id, std::string reason) override;
  void OnDisplace(uint64_t tab_id, std::string reason) override;
  void OnAgents(uint64_t tab_id, uint32_t count) override;
  void OnTabResponse(uint64_t tab_id, std::string tab_request_id, bool is_error,
                     std::string payload) override;
  void OnStreamEvent(uint64_t stream_id, uint64_t event_id, std::string message) override;
  void OnSessionEnded(std::string session_id) override;
  void OnLinkDown(size_t shard) override;
  void OnLinkUp(size_t shard) override;

 private:
  Registry<TabSession>& tabs_;
  Registry<HttpSession>& streams_;
  EndedSessions& ended_;
  std::atomic<RouterClient*> router_{nullptr};
};

}  // namespace relay::gateway
