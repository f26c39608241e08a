#include "common/batch_queue.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace relay::common {
namespace {

struct FakeBatch {
  std::vector<std::string> items;
  std::string* add_item() { return &items.emplace_back(); }
};
using Queue = BatchQueue<FakeBatch, std::string, &FakeBatch::add_item>;

TEST(BatchQueueTest, ALoneMessageGoesAtOnceAndWhatWaitsGoesTogether) {
  Queue queue(100, 1000);
  ASSERT_TRUE(queue.Push("a", 1));
  FakeBatch* first = queue.Next();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->items, std::vector<std::string>({"a"}));
  // While it is written, others wait, and Next gives nothing.
  queue.Push("b", 1);
  queue.Push("c", 1);
  EXPECT_EQ(queue.Next(), nullptr);
  queue.Written();
  FakeBatch* second = queue.Next();
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->items, std::vector<std::string>({"b", "c"}));
  queue.Written();
  EXPECT_EQ(queue.Next(), nullptr);
  EXPECT_EQ(queue.queued_bytes(), 0u);
}

TEST(BatchQueueTest, BatchesAreCutAtTheirSizeAndTheWholeQueueIsBounded) {
  Queue queue(10, 25);
  queue.Push("x", 4);
  queue.Push("y", 4);  // 8: still the same batch
  queue.Push("z", 4);  // 12 would pass 10: a new batch
  queue.Push("w", 12);  // larger than a batch: alone
  EXPECT_FALSE(queue.Push("too much", 2));  // 26 > 25
  EXPECT_EQ(queue.queued_bytes(), 24u);
  EXPECT_EQ(queue.Next()->items, std::vector<std::string>({"x", "y"}));
  queue.Written();
  EXPECT_EQ(queue.Next()->items, std::vector<std::string>({"z"}));
  queue.Written();
  EXPECT_EQ(queue.Next()->items, std::vector<std::string>({"w"}));
  queue.Written();
  EXPECT_TRUE(queue.empty());
  EXPECT_EQ(queue.queued_bytes(), 0u);
}

}  // namespace
}  // namespace relay::common
