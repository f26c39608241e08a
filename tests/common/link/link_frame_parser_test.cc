#include "common/link/link_frame_parser.h"

#include <string>

#include <gtest/gtest.h>

#include "relay/v1/router.pb.h"

namespace relay::common {
namespace {

using relay::v1::GatewayBatch;

std::string Batch(int calls, const std::string& params) {
  GatewayBatch batch;
  for (int i = 0; i < calls; ++i) {
    auto* start = batch.add_events()->mutable_call_start();
    start->set_call_ref(i + 1);
    start->set_account("alice");
    start->set_params(params);
  }
  return batch.SerializeAsString();
}

TEST(LinkFrameParser, EachFrameIsReadWhole) {
  LinkFrameParser<GatewayBatch> parser;
  // Frames of every size, one after another in the same arena: small ones in
  // its first block, large ones beyond it; each read as it was sent.
  for (int calls : {1, 3, 500, 2, 0, 2000, 1}) {
    const std::string params = std::string(calls % 7 == 0 ? 5000 : 20, 'x');
    std::string kept;
    int seen = -1;
    ASSERT_TRUE(parser.Parse(Batch(calls, params), [&](GatewayBatch& batch) {
      seen = batch.events_size();
      for (int i = 0; i < batch.events_size(); ++i) {
        EXPECT_EQ(batch.events(i).call_start().call_ref(), static_cast<uint64_t>(i + 1));
        EXPECT_EQ(batch.events(i).call_start().params(), params);
      }
      if (calls > 0) {
        kept = std::move(*batch.mutable_events(0)->mutable_call_start()->mutable_params());
      }
    }));
    EXPECT_EQ(seen, calls);
    // What a handler moved out outlives the frame.
    ASSERT_TRUE(parser.Parse(Batch(1, "other"), [](GatewayBatch&) {}));
    EXPECT_EQ(kept, calls > 0 ? params : "");
  }
}

TEST(LinkFrameParser, AFrameThatIsNotABatchIsRefused) {
  LinkFrameParser<GatewayBatch> parser;
  bool handled = false;
  EXPECT_FALSE(parser.Parse(std::string("\xff\xff\xff\xff\xff", 5),
                            [&](GatewayBatch&) { handled = true; }));
  EXPECT_FALSE(handled);
  // ... and the next frame is read as usual.
  EXPECT_TRUE(parser.Parse(Batch(2, "{}"), [&](GatewayBatch& batch) {
    handled = batch.events_size() == 2;
  }));
  EXPECT_TRUE(handled);
}

}  // namespace
}  // namespace relay::common
