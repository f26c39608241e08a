// What a gateway's link may send a router shard (a peer with a stolen gateway
// certificate sends anything): the frames, each parsed as a GatewayBatch, and
// every event through the router's rules (RouterCore) on two links, then both
// links' ends.
#include <cstddef>
#include <cstdint>

#include "absl/time/time.h"
#include "common/link/link_frame_parser.h"
#include "link_feed.h"
#include "relay/v1/router.pb.h"
#include "router/core/router_core.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  relay::router::RouterCore core(1);
  core.LinkUp(1);
  core.LinkUp(2);
  relay::router::Outbox out;
  absl::Time now = absl::FromUnixSeconds(1800000000);
  relay::common::LinkFrameParser<relay::v1::GatewayBatch> parser;
  size_t frames = 0;
  relay::fuzz::FeedLink(data, size, [&](absl::string_view frame) {
    const uint64_t link = 1 + frames++ % 2;
    parser.Parse(frame, [&](relay::v1::GatewayBatch& batch) {
      for (relay::v1::GatewayEvent& event : *batch.mutable_events()) {
        core.Handle(link, event, now, out);
        now += absl::Milliseconds(250);
      }
    });
    core.Sweep(now, out);
    out.clear();
  });
  core.LinkDown(1, now, out);
  core.LinkDown(2, now, out);
  return 0;
}
