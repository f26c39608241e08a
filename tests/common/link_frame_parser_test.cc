#include "common/link_frame_parser.h"

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
    GatewayBatch* batch = parser.Parse(Batch(calls, params));
    ASSERT_NE(batch, nullptr);
    ASSERT_EQ(batch->events_size(), calls);
    for (int i = 0; i < calls; ++i) {
      EXPECT_EQ(batch->events(i).call_start().call_ref(), static_cast<uint64_t>(i + 1));
      EXPECT_EQ(batch->events(i).call_start().params(), params);
    }
    // What a handler moves out survives the next frame.
    if (calls > 0) {
      std::string kept = std::move(*batch->mutable_events(0)->mutable_call_start()->mutable_params());
      parser.Parse(Batch(1, "other"));
      EXPECT_EQ(kept, params);
    }
  }
}

TEST(LinkFrameParser, AFrameThatIsNotABatchIsRefused) {
  LinkFrameParser<GatewayBatch> parser;
  EXPECT_EQ(parser.Parse(std::string("\xff\xff\xff\xff\xff", 5)), nullptr);
  // ... and the next frame is read as usual.
  ASSERT_NE(parser.Parse(Batch(2, "{}")), nullptr);
}

}  // namespace
}  // namespace relay::common
