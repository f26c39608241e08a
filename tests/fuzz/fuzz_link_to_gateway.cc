// What a router shard's link may send a gateway (a peer with a stolen router
// certificate, or a broken router): the frames, each parsed as a RouterBatch
// into the link's arena, and every command's fields read as the gateway's
// handlers read them (the account, the tab message, a call's event and end).
#include <cstddef>
#include <cstdint>

#include "common/link/link_frame_parser.h"
#include "link_feed.h"
#include "relay/v1/router.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  relay::common::LinkFrameParser<relay::v1::RouterBatch> parser;
  size_t bytes = 0;
  relay::fuzz::FeedLink(data, size, [&](absl::string_view frame) {
    parser.Parse(frame, [&](relay::v1::RouterBatch& batch) {
      for (relay::v1::RouterCommand& command : *batch.mutable_commands()) {
        // The gateway moves strings out of the arena's messages: the same here.
        std::string taken;
        switch (command.command_case()) {
          case relay::v1::RouterCommand::kDeliver:
            taken = std::move(*command.mutable_deliver()->mutable_params());
            break;
          case relay::v1::RouterCommand::kCallEvent:
            taken = std::move(*command.mutable_call_event()->mutable_message());
            break;
          case relay::v1::RouterCommand::kCallDone:
            taken = std::move(*command.mutable_call_done()->mutable_result());
            break;
          default:
            taken = command.ShortDebugString();
            break;
        }
        bytes += taken.size();
      }
    });
  });
  return bytes == SIZE_MAX ? 1 : 0;
}
