#include "gateway/net/shards/router_commands.h"

#include "common/log.h"
#include "gateway/net/agent/agent_stream.h"
#include "gateway/net/tab/tab_session.h"
#include "relay/v1/router.pb.h"

namespace relay::gateway {

using relay::v1::RouterCommand;

void RouterCommands::OnCommand(RouterCommand& command) {
  switch (command.command_case()) {
    case RouterCommand::kTabAccepted:
      if (auto tab = tabs_.Find(command.tab_accepted().tab_id())) {
        tab->PostAccepted(command.tab_accepted().agents());
      }
      break;
    case RouterCommand::kDeliver:
      // A tab that has left already sent its TabDown on the same link, so the
      // router fails the call; nothing to do here then.
      if (auto tab = tabs_.Find(command.deliver().tab_id())) {
        auto* deliver = command.mutable_deliver();
        if (common::LogEnabled(common::LogLevel::kDebug)) {
          common::Log(common::LogLevel::kDebug, "call delivered to its tab",
                      {{"call", deliver->trace_id()},
                       {"tab", command.deliver().tab_id()},
                       {"tab_call", deliver->call_id()},
                       {"method", deliver->method()}});
        }
        tab->PostDeliver(deliver->call_id(), std::move(*deliver->mutable_method()),
                         std::move(*deliver->mutable_params()));
      }
      break;
    case RouterCommand::kCancel:
      if (auto tab = tabs_.Find(command.cancel().tab_id())) {
        tab->PostCancel(command.cancel().call_id(),
                        std::move(*command.mutable_cancel()->mutable_reason()));
      }
      break;
    case RouterCommand::kDisplace:
      if (auto tab = tabs_.Find(command.displace().tab_id())) {
        tab->PostDisplace(std::move(*command.mutable_displace()->mutable_reason()));
      }
      break;
    case RouterCommand::kAgents:
      if (auto tab = tabs_.Find(command.agents().tab_id())) {
        tab->PostAgents(command.agents().count());
      }
      break;
    case RouterCommand::kTabResponse:
      if (auto tab = tabs_.Find(command.tab_response().tab_id())) {
        auto* response = command.mutable_tab_response();
        tab->PostResponse(std::move(*response->mutable_tab_request_id()), response->is_error(),
                          std::move(*response->mutable_payload()));
      }
      break;
    case RouterCommand::kStreamEvent:
      if (auto stream = streams_.Find(command.stream_event().stream_id())) {
        auto* event = command.mutable_stream_event();
        stream->PostEvent(event->event_id(), std::move(*event->mutable_message()));
      }
      break;
    case RouterCommand::kStreamOpened:
      if (auto stream = streams_.Find(command.stream_opened().stream_id())) {
        stream->PostOpened();
      }
      break;
    case RouterCommand::kStreamEnd:
      if (auto stream = streams_.Find(command.stream_end().stream_id())) {
        stream->PostEnd(std::move(*command.mutable_stream_end()->mutable_reason()));
      }
      break;
    case RouterCommand::kSessionEnded: {
      const std::string& session = command.session_ended().session_id();
      ended_.Add(session);
      // Its GET streams end too, wherever they are open: found by the
      // session, not by visiting every stream (every session's end comes here).
      for (auto& stream : streams_.WithKey(RegistryKey(session))) {
        stream->PostSessionEnded(session);
      }
      break;
    }
    case RouterCommand::kCallEvent:
    case RouterCommand::kCallDone:
      // The router client hands these to the call's waiter.
    case RouterCommand::COMMAND_NOT_SET:
      break;
  }
}

void RouterCommands::OnLinkDown(size_t shard) {
  link_downs_.Add();
  // An item per tab that may hold a call, in the calls' lane: ahead of every
  // delivery a later link of the shard hands over. (In the fan-outs' lane a
  // delivery on the link after next could overtake it, and be cancelled by it,
  // when the link ends twice while re-announcements are still queued.)
  GatheredPosts gathered;
  for (auto& tab : tabs_.Snapshot(shard)) {
    // A tab with no call has nothing to give up. (Its calls come on this
    // thread, so one handed over before now counts.)
    if (tab->MayHoldCalls()) {
      tab->PostLinkDown(shard);  // which checks again, on its thread
    }
  }
}

void RouterCommands::OnLinkUp(size_t shard) {
  if (!ready_.load()) {
    return;  // still starting: there are no tabs or streams yet
  }
  // A visit to each tab and stream on its own thread, in the lane of
  // fan-outs, which a call's work overtakes: the router sends nothing for a
  // tab or stream on this link before the re-announcement the visit sends (it
  // forgot them with the last link).
  GatheredPosts::FanOut(tabs_.Snapshot(shard), [shard](TabSession& tab) { tab.Reannounce(shard); });
  GatheredPosts::FanOut(streams_.Snapshot(shard),
                        [shard](AgentStream& stream) { stream.Reannounce(shard); });
}

}  // namespace relay::gateway
