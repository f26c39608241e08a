#pragma once

#include <atomic>
#include <optional>

#include "common/metrics.h"
#include "gateway/net/gathered_posts.h"
#include "gateway/net/registry.h"
#include "gateway/core/router_client.h"
#include "gateway/core/session_state.h"

namespace relay::gateway {

class AgentStream;
class TabSession;

// Where the routers' commands for tabs and streams are told apart on the
// gateway (a call's own events and end never come here: RouterShard hands
// them to the call's waiter): each is posted to the I/O thread of the tab or
// stream it is for. Commands and link ends come on the links' thread (the
// first I/O thread; the gathering below relies on there being one), link
// starts on the CqLoop thread.
class RouterCommands final : public RouterCommandSink {
 public:
  // link_downs counts the ends of shards' links (relay_gateway_router_link_downs_total).
  RouterCommands(Registry<TabSession>& tabs, Registry<AgentStream>& streams,
                 EndedSessions& ended, common::Counter& link_downs)
      : tabs_(tabs), streams_(streams), ended_(ended), link_downs_(link_downs) {}

  // Set once the router client exists; until then there is nothing to re-announce.
  void SetReady() { ready_.store(true); }

  void BeginBatch() override { gathered_.emplace(); }
  void EndBatch() override { gathered_.reset(); }
  void OnCommand(relay::v1::RouterCommand& command) override;
  void OnLinkDown(size_t shard) override;
  void OnLinkUp(size_t shard) override;

 private:
  Registry<TabSession>& tabs_;
  Registry<AgentStream>& streams_;
  EndedSessions& ended_;
  common::Counter& link_downs_;
  std::atomic<bool> ready_{false};
  // Open while the links' thread hands out a batch (that thread alone touches it).
  std::optional<GatheredPosts> gathered_;
};

}  // namespace relay::gateway
