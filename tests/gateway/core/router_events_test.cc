#include "gateway/core/router_events.h"

#include <gtest/gtest.h>

namespace relay::gateway {
namespace {

TEST(RouterEventsTest, NoEffectSendsNothing) {
  EXPECT_FALSE(EffectEvent("alice", "s1", SessionEffect{}).has_value());
}

TEST(RouterEventsTest, SubscribeAndUnsubscribeCarryTheUriAndTheAccount) {
  SessionEffect effect;
  effect.kind = SessionEffect::Kind::kSubscribe;
  effect.value = "doc://1";
  auto event = EffectEvent("alice", "s1", effect);
  ASSERT_TRUE(event.has_value());
  ASSERT_TRUE(event->has_session_subscribe());
  EXPECT_EQ(event->session_subscribe().account(), "alice");
  EXPECT_EQ(event->session_subscribe().session_id(), "s1");
  EXPECT_EQ(event->session_subscribe().uri(), "doc://1");
  EXPECT_TRUE(event->session_subscribe().subscribe());

  effect.kind = SessionEffect::Kind::kUnsubscribe;
  event = EffectEvent("alice", "s1", effect);
  ASSERT_TRUE(event.has_value());
  EXPECT_FALSE(event->session_subscribe().subscribe());
}

TEST(RouterEventsTest, LogLevel) {
  SessionEffect effect;
  effect.kind = SessionEffect::Kind::kLogLevel;
  effect.value = "warning";
  auto event = EffectEvent("bob", "s2", effect);
  ASSERT_TRUE(event.has_value() && event->has_session_log_level());
  EXPECT_EQ(event->session_log_level().level(), "warning");
  EXPECT_EQ(event->session_log_level().account(), "bob");
}

TEST(RouterEventsTest, TheAgentsAnswerGoesToTheCallAndTheTabsRequest) {
  SessionEffect effect;
  effect.kind = SessionEffect::Kind::kAgentReply;
  effect.call_id = 42;
  effect.tab_request_id = "t-7";
  effect.is_error = true;
  effect.payload = R"({"code":-1})";
  auto event = EffectEvent("alice", "s1", effect);
  ASSERT_TRUE(event.has_value() && event->has_agent_reply());
  EXPECT_EQ(event->agent_reply().call_id(), 42u);
  EXPECT_EQ(event->agent_reply().tab_request_id(), "t-7");
  EXPECT_TRUE(event->agent_reply().is_error());
  EXPECT_EQ(event->agent_reply().payload(), R"({"code":-1})");
  EXPECT_EQ(event->agent_reply().account(), "alice");
}

TEST(RouterEventsTest, TheAgentsCancelNamesItsRequestAndReason) {
  SessionEffect effect;
  effect.kind = SessionEffect::Kind::kAgentCancel;
  effect.value = "7";
  effect.reason = "user stopped";
  auto event = EffectEvent("alice", "s1", effect);
  ASSERT_TRUE(event.has_value() && event->has_agent_cancel());
  EXPECT_EQ(event->agent_cancel().request_id(), "7");
  EXPECT_EQ(event->agent_cancel().reason(), "user stopped");
  EXPECT_EQ(event->agent_cancel().session_id(), "s1");
}

TEST(RouterEventsTest, SessionAndStreamEvents) {
  auto touch = SessionTouchEvent("alice", "s1");
  EXPECT_EQ(touch.session_touch().account(), "alice");
  EXPECT_EQ(touch.session_touch().session_id(), "s1");
  auto end = SessionEndEvent("alice", "s1");
  EXPECT_EQ(end.session_end().session_id(), "s1");
  auto open = StreamOpenEvent(9, "alice", "s1", 12);
  EXPECT_EQ(open.stream_open().stream_id(), 9u);
  EXPECT_EQ(open.stream_open().last_event_id(), 12u);
  EXPECT_EQ(open.stream_open().account(), "alice");
  EXPECT_FALSE(open.stream_open().confirm());  // a GET stream: nothing to acknowledge
  EXPECT_TRUE(StreamOpenEvent(9, "alice", "l.key.1.1", 0, /*confirm=*/true).stream_open().confirm());
  auto close = StreamCloseEvent(9, "s1");
  EXPECT_EQ(close.stream_close().stream_id(), 9u);
  EXPECT_EQ(close.stream_close().session_id(), "s1");
}

TEST(RouterEventsTest, TabEventsNameTheTab) {
  TabAnnouncement tab{"alice", "editor", "Editor", "1.2"};
  auto up = TabUpEvent(5, tab);
  EXPECT_EQ(up.tab_up().tab_id(), 5u);
  EXPECT_EQ(up.tab_up().account(), "alice");
  EXPECT_EQ(up.tab_up().role(), "editor");
  EXPECT_EQ(up.tab_up().client_name(), "Editor");
  EXPECT_EQ(up.tab_up().client_version(), "1.2");
  EXPECT_EQ(TabDownEvent(5).tab_down().tab_id(), 5u);

  relay::v1::GatewayEvent reply;
  TabReplyInto(reply, 5, 42, true, R"({"code":1})");
  EXPECT_EQ(reply.tab_reply().tab_id(), 5u);
  EXPECT_EQ(reply.tab_reply().call_id(), 42u);
  EXPECT_TRUE(reply.tab_reply().is_error());
  EXPECT_EQ(reply.tab_reply().payload(), R"({"code":1})");

  TabNotice notice;
  notice.method = "notifications/progress";
  notice.progress_token = "p1";
  notice.call_id = 42;
  notice.line = "edited";
  notice.params = "{}";
  auto note = TabNotificationEvent(5, notice);
  EXPECT_EQ(note.tab_notification().tab_id(), 5u);
  EXPECT_EQ(note.tab_notification().method(), "notifications/progress");
  EXPECT_EQ(note.tab_notification().progress_token(), "p1");
  EXPECT_EQ(note.tab_notification().call_id(), 42u);
  EXPECT_EQ(note.tab_notification().line(), "edited");

  auto request = TabRequestEvent(5, AgentRequest{42, "7", R"({"method":"roots/list"})"});
  EXPECT_EQ(request.tab_request().tab_id(), 5u);
  EXPECT_EQ(request.tab_request().call_id(), 42u);
  EXPECT_EQ(request.tab_request().tab_request_id(), "7");
  EXPECT_EQ(request.tab_request().message(), R"({"method":"roots/list"})");
}

}  // namespace
}  // namespace relay::gateway
