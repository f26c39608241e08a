#include "common/batch_queue.h"

#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "relay/v1/router.pb.h"

namespace relay::common {
namespace {

// Queues text as a message of its bytes.
bool Push(BatchQueue& queue, const std::string& text) {
  char* at = queue.Append(text.size());
  if (at == nullptr) {
    return false;
  }
  std::memcpy(at, text.data(), text.size());
  return true;
}

// A batch's bytes, read back as the batch message whose field 1 repeats the
// items: the stream's peer parses them so.
std::vector<std::string> Sessions(const std::string& bytes) {
  relay::v1::GatewayBatch batch;
  EXPECT_TRUE(batch.ParseFromString(bytes));
  std::vector<std::string> sessions;
  for (const auto& event : batch.events()) {
    sessions.push_back(event.session_end().session_id());
  }
  return sessions;
}

std::string Ended(const std::string& session) {
  relay::v1::GatewayEvent event;
  event.mutable_session_end()->set_session_id(session);
  return event.SerializeAsString();
}

TEST(BatchQueueTest, ALoneMessageGoesAtOnceAndWhatWaitsGoesTogether) {
  BatchQueue queue(1000, 10000);
  ASSERT_TRUE(Push(queue, Ended("a")));
  const std::string* first = queue.Next();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(Sessions(*first), std::vector<std::string>({"a"}));
  // While it is written, others wait, and Next gives nothing.
  Push(queue, Ended("b"));
  Push(queue, Ended("c"));
  EXPECT_EQ(queue.Next(), nullptr);
  queue.Written();
  const std::string* second = queue.Next();
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(Sessions(*second), std::vector<std::string>({"b", "c"}));
  queue.Written();
  EXPECT_EQ(queue.Next(), nullptr);
  EXPECT_EQ(queue.queued_bytes(), 0u);
}

TEST(BatchQueueTest, AnEntryIsItsTagItsLengthAndItsBytes) {
  EXPECT_EQ(BatchQueue::EntryBytes(0), 2u);
  EXPECT_EQ(BatchQueue::EntryBytes(127), 129u);
  EXPECT_EQ(BatchQueue::EntryBytes(128), 131u);  // a two-byte length
  EXPECT_EQ(BatchQueue::EntryBytes(1 << 24), 1u + 4u + (1u << 24));
  // A message past 127 bytes, with one before and one after, read back whole.
  BatchQueue queue(1 << 20, 1 << 20);
  const std::string long_id(300, 'x');
  Push(queue, Ended("before"));
  Push(queue, Ended(long_id));
  Push(queue, Ended("after"));
  const std::string* batch = queue.Next();
  ASSERT_NE(batch, nullptr);
  EXPECT_EQ(Sessions(*batch), std::vector<std::string>({"before", long_id, "after"}));
  EXPECT_EQ(queue.queued_bytes(), batch->size());
}

TEST(BatchQueueTest, BatchesAreCutAtTheirSizeAndTheWholeQueueIsBounded) {
  // Each message of 2 bytes takes an entry of 4.
  BatchQueue queue(10, 25);
  Push(queue, "x1");
  Push(queue, "y1");  // 8: still the same batch
  Push(queue, "z1");  // 12 would pass 10: a new batch
  Push(queue, std::string(10, 'w'));  // an entry of 12, larger than a batch: alone
  EXPECT_FALSE(Push(queue, "no"));  // 28 > 25
  EXPECT_EQ(queue.queued_bytes(), 24u);
  EXPECT_EQ(*queue.Next(), std::string("\x0a\x02x1\x0a\x02y1"));
  queue.Written();
  EXPECT_EQ(*queue.Next(), std::string("\x0a\x02z1"));
  queue.Written();
  EXPECT_EQ(*queue.Next(), "\x0a\x0a" + std::string(10, 'w'));
  queue.Written();
  EXPECT_TRUE(queue.empty());
  EXPECT_EQ(queue.queued_bytes(), 0u);
  // A written batch's buffer serves the next: the queue works on as before.
  ASSERT_TRUE(Push(queue, "v1"));
  EXPECT_EQ(*queue.Next(), std::string("\x0a\x02v1"));
  queue.Written();
}

TEST(BatchQueueTest, EachBatchStartsWithRoomForTheWritersHeaderAndMayBeSwappedOut) {
  BatchQueue queue(1000, 10000, /*header_bytes=*/4);
  Push(queue, "a1");
  Push(queue, "b1");
  EXPECT_EQ(queue.queued_bytes(), 8u);  // the entries alone count
  std::string* batch = queue.Next();
  ASSERT_NE(batch, nullptr);
  EXPECT_EQ(*batch, std::string("\0\0\0\0\x0a\x02" "a1\x0a\x02" "b1", 12));
  // The writer takes the batch whole, leaving a buffer of its own.
  std::string out("old");
  out.swap(*batch);
  queue.Written();
  EXPECT_EQ(queue.queued_bytes(), 0u);
  EXPECT_EQ(out.substr(4), std::string("\x0a\x02" "a1\x0a\x02" "b1"));
  // The next batch has its room again, and nothing of what was swapped in.
  Push(queue, "c1");
  EXPECT_EQ(*queue.Next(), std::string("\0\0\0\0\x0a\x02" "c1", 8));
  queue.Written();
  EXPECT_TRUE(queue.empty());
}

}  // namespace
}  // namespace relay::common
