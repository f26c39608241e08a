#include "router/core/outbox.h"

#include <string>

#include <google/protobuf/arena.h>

#include "gtest/gtest.h"

namespace relay::router {
namespace {

TEST(OutboxTest, CommandsLiveOnTheArenaGivenAndKeepTheirOrder) {
  google::protobuf::Arena arena;
  Outbox out(&arena);
  AddCommand(out, 1).mutable_deliver()->set_call_id(10);
  AddCommand(out, 2).mutable_deliver()->set_call_id(20);
  AddCommand(out, 1).mutable_deliver()->set_call_id(30);
  ASSERT_EQ(out.size(), 3u);
  for (const Outgoing& o : out) {
    EXPECT_EQ(o.command.GetArena(), &arena);
  }
  // A string moved in keeps its bytes where they were: no copy.
  std::string params(1000, 'p');
  const char* bytes = params.data();
  out[0].command.mutable_deliver()->set_params(std::move(params));
  EXPECT_EQ(out[0].command.deliver().params().data(), bytes);
  // A link gone: its commands go, the others stay in order.
  out.EraseFor(1);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].link_id, 2u);
  EXPECT_EQ(out[0].command.deliver().call_id(), 20u);
}

TEST(OutboxTest, WithoutAnArenaItMakesItsOwnAtTheFirstCommand) {
  Outbox out;
  EXPECT_TRUE(out.empty());
  relay::v1::RouterCommand& command = AddCommand(out, 7);
  EXPECT_NE(command.GetArena(), nullptr);
  command.mutable_displace()->set_reason("moved");
  Outbox moved = std::move(out);  // (a test helper returns its outbox)
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_EQ(moved[0].command.displace().reason(), "moved");
  // What was moved from is empty, and used again makes an arena of its own,
  // not one the other outbox frees.
  EXPECT_TRUE(out.empty());  // NOLINT(bugprone-use-after-move): what a move leaves
  EXPECT_NE(AddCommand(out, 9).GetArena(), moved[0].command.GetArena());
  moved.clear();
  EXPECT_TRUE(moved.empty());
  AddCommand(moved, 8);
  EXPECT_EQ(moved.size(), 1u);
}

}  // namespace
}  // namespace relay::router
