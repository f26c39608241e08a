#include "router/core/router_core.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

// Whole scenarios of the router's rules, driven through RouterCore with a
// recording outbox: what each gateway would be sent, in order.
namespace relay::router {
namespace {

using relay::v1::Failure;
using relay::v1::GatewayEvent;
using relay::v1::RouterCommand;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr uint64_t kFirstCall = 1000;
constexpr uint64_t kTabGateway = 1;    // link of the gateway holding tabs
constexpr uint64_t kAgentGateway = 2;  // link of the gateway the agents use

class RouterCoreTest : public ::testing::Test {
 protected:
  RouterCoreTest() : core_(kFirstCall, Options()) {
    core_.LinkUp(kTabGateway);
    core_.LinkUp(kAgentGateway);
  }

  static RouterCoreOptions Options() {
    RouterCoreOptions options;
    options.max_inflight_per_account = 3;
    return options;
  }

  // Sends one event from a link; returns what the core wants sent.
  Outbox Send(uint64_t link, GatewayEvent event) {
    Outbox out;
    core_.Handle(link, event, now_, out);
    return out;
  }

  Outbox TabUp(uint64_t link, uint64_t tab_id, const std::string& account,
               uint64_t generation = 0) {
    GatewayEvent e;
    e.mutable_tab_up()->set_tab_id(tab_id);
    e.mutable_tab_up()->set_account(account);
    e.mutable_tab_up()->set_generation(generation);
    return Send(link, e);
  }

  Outbox Start(uint64_t ref, const std::string& account, const std::string& method = "tools/call",
               const std::string& session = "s1", const std::string& request_id = "7") {
    GatewayEvent e;
    auto* start = e.mutable_call_start();
    start->set_call_ref(ref);
    start->set_account(account);
    start->set_session_id(session);
    start->set_method(method);
    start->set_params(R"({"name":"get_view"})");
    start->set_request_id(request_id);
    return Send(kAgentGateway, e);
  }

  Outbox Reply(uint64_t link, uint64_t tab_id, uint64_t call_id, const std::string& payload,
               bool is_error = false) {
    GatewayEvent e;
    auto* reply = e.mutable_tab_reply();
    reply->set_tab_id(tab_id);
    reply->set_call_id(call_id);
    reply->set_payload(payload);
    reply->set_is_error(is_error);
    return Send(link, e);
  }

  Outbox Cancel(uint64_t ref) {
    GatewayEvent e;
    e.mutable_call_cancel()->set_call_ref(ref);
    e.mutable_call_cancel()->set_reason("the call's deadline passed");
    return Send(kAgentGateway, e);
  }

  // The one Deliver in out; its call id.
  static uint64_t DeliveredCall(const Outbox& out) {
    for (const Outgoing& o : out) {
      if (o.command.has_deliver()) {
        return o.command.deliver().call_id();
      }
    }
    ADD_FAILURE() << "no Deliver";
    return 0;
  }

  static std::vector<const Outgoing*> Of(const Outbox& out, RouterCommand::CommandCase kind) {
    std::vector<const Outgoing*> found;
    for (const Outgoing& o : out) {
      if (o.command.command_case() == kind) {
        found.push_back(&o);
      }
    }
    return found;
  }

  absl::Time now_ = absl::FromUnixSeconds(1000000);
  RouterCore core_;
};

TEST_F(RouterCoreTest, ACallGoesToTheAccountsTabAndItsAnswerBackToTheCaller) {
  Outbox up = TabUp(kTabGateway, 5, "alice");
  ASSERT_THAT(Of(up, RouterCommand::kTabAccepted), SizeIs(1));
  EXPECT_EQ(up[0].link_id, kTabGateway);

  Outbox start = Start(/*ref=*/41, "alice");
  ASSERT_THAT(start, SizeIs(1));
  EXPECT_EQ(start[0].link_id, kTabGateway);
  const auto& deliver = start[0].command.deliver();
  EXPECT_EQ(deliver.tab_id(), 5u);
  EXPECT_EQ(deliver.call_id(), kFirstCall);
  EXPECT_EQ(deliver.method(), "tools/call");
  EXPECT_EQ(deliver.params(), R"({"name":"get_view"})");

  Outbox done = Reply(kTabGateway, 5, kFirstCall, R"({"content":[]})");
  ASSERT_THAT(done, SizeIs(1));
  EXPECT_EQ(done[0].link_id, kAgentGateway);
  EXPECT_EQ(done[0].command.call_done().call_ref(), 41u);
  EXPECT_EQ(done[0].command.call_done().result(), R"({"content":[]})");
  EXPECT_EQ(core_.CallsInFlight(), 0u);
  // A second answer to the same call is dropped.
  EXPECT_THAT(Reply(kTabGateway, 5, kFirstCall, "{}"), IsEmpty());
}

TEST_F(RouterCoreTest, WithoutATabACallFailsAtOnce) {
  Outbox out = Start(1, "nobody");
  ASSERT_THAT(out, SizeIs(1));
  EXPECT_EQ(out[0].link_id, kAgentGateway);
  EXPECT_EQ(out[0].command.call_done().failure().reason(), Failure::REASON_NO_TAB);
  EXPECT_EQ(core_.counts().no_tab, 1u);
}

TEST_F(RouterCoreTest, ATabDisplacedMidCallFailsItsCallsAndTheNewTabTakesTheNext) {
  TabUp(kTabGateway, 5, "alice");
  uint64_t first = DeliveredCall(Start(1, "alice"));
  // A second tab of alice comes up through the agents' gateway.
  Outbox up = TabUp(kAgentGateway, 9, "alice");
  auto done = Of(up, RouterCommand::kCallDone);
  ASSERT_THAT(done, SizeIs(1));
  EXPECT_EQ(done[0]->link_id, kAgentGateway);
  EXPECT_EQ(done[0]->command.call_done().failure().reason(), Failure::REASON_DISPLACED);
  auto displace = Of(up, RouterCommand::kDisplace);
  ASSERT_THAT(displace, SizeIs(1));
  EXPECT_EQ(displace[0]->link_id, kTabGateway);
  EXPECT_EQ(displace[0]->command.displace().tab_id(), 5u);
  ASSERT_THAT(Of(up, RouterCommand::kTabAccepted), SizeIs(1));
  // The old tab's late answer goes nowhere; the next call reaches the new tab.
  EXPECT_THAT(Reply(kTabGateway, 5, first, "{}"), IsEmpty());
  Outbox next = Start(2, "alice");
  ASSERT_THAT(next, SizeIs(1));
  EXPECT_EQ(next[0].link_id, kAgentGateway);
  EXPECT_EQ(next[0].command.deliver().tab_id(), 9u);
}

// Issue 25.2: the tab's gateway loses its link (and with it any Displace),
// the person opens the editor again on another gateway, and the first gateway
// relinks and announces the old tab again. The newest tab keeps the account;
// the old one is told it was displaced and never becomes the routing target.
TEST_F(RouterCoreTest, AnOldTabAnnouncedAgainAfterARelinkDoesNotDisplaceTheNewest) {
  constexpr uint64_t kOtherGateway = 3, kRelinked = 4;
  core_.LinkUp(kOtherGateway);
  TabUp(kTabGateway, 5, "alice", /*generation=*/100);
  Outbox down;
  core_.LinkDown(kTabGateway, now_, down);
  ASSERT_THAT(Of(TabUp(kOtherGateway, 9, "alice", /*generation=*/200), RouterCommand::kTabAccepted),
              SizeIs(1));

  core_.LinkUp(kRelinked);
  Outbox again = TabUp(kRelinked, 5, "alice", /*generation=*/100);
  EXPECT_THAT(Of(again, RouterCommand::kTabAccepted), IsEmpty());
  auto displace = Of(again, RouterCommand::kDisplace);
  ASSERT_THAT(displace, SizeIs(1));
  EXPECT_EQ(displace[0]->link_id, kRelinked);
  EXPECT_EQ(displace[0]->command.displace().tab_id(), 5u);
  EXPECT_THAT(Of(again, RouterCommand::kCallDone), IsEmpty());

  Outbox next = Start(1, "alice");
  ASSERT_THAT(next, SizeIs(1));
  EXPECT_EQ(next[0].link_id, kOtherGateway);
  EXPECT_EQ(next[0].command.deliver().tab_id(), 9u);
}

// The same tab announced again on its own link (the link came back) stays
// the account's tab and is accepted again, quietly.
TEST_F(RouterCoreTest, ATabAnnouncedAgainOnItsLinkIsAcceptedWithoutADisplace) {
  TabUp(kTabGateway, 5, "alice", 100);
  Outbox again = TabUp(kTabGateway, 5, "alice", 100);
  EXPECT_THAT(Of(again, RouterCommand::kDisplace), IsEmpty());
  EXPECT_THAT(Of(again, RouterCommand::kTabAccepted), SizeIs(1));
}

TEST_F(RouterCoreTest, ACancelRacingTheAnswer) {
  TabUp(kTabGateway, 5, "alice");
  // The cancel wins: the tab is told, its answer is dropped, no CallDone.
  uint64_t call = DeliveredCall(Start(1, "alice"));
  Outbox cancel = Cancel(1);
  ASSERT_THAT(cancel, SizeIs(1));
  EXPECT_EQ(cancel[0].link_id, kTabGateway);
  EXPECT_EQ(cancel[0].command.cancel().call_id(), call);
  EXPECT_EQ(cancel[0].command.cancel().reason(), "the call's deadline passed");
  EXPECT_THAT(Reply(kTabGateway, 5, call, "{}"), IsEmpty());
  // The answer wins: the agent gets it, the late cancel does nothing.
  uint64_t second = DeliveredCall(Start(2, "alice"));
  EXPECT_THAT(Reply(kTabGateway, 5, second, "{}"), SizeIs(1));
  EXPECT_THAT(Cancel(2), IsEmpty());
}

TEST_F(RouterCoreTest, OnlyTheTabThatHoldsTheCallMayAnswerIt) {
  TabUp(kTabGateway, 5, "alice");
  TabUp(kTabGateway, 6, "mallory");
  uint64_t call = DeliveredCall(Start(1, "alice"));
  EXPECT_THAT(Reply(kTabGateway, 6, call, R"({"content":[{"text":"forged"}]})"), IsEmpty());
  EXPECT_THAT(Reply(kAgentGateway, 5, call, R"({"content":[{"text":"forged"}]})"), IsEmpty());
  Outbox done = Reply(kTabGateway, 5, call, R"({"content":[]})");
  ASSERT_THAT(done, SizeIs(1));
  EXPECT_EQ(done[0].command.call_done().result(), R"({"content":[]})");
}

TEST_F(RouterCoreTest, TheTabsGatewayLostWithCallsInFlight) {
  TabUp(kTabGateway, 5, "alice");
  Start(1, "alice");
  Start(2, "alice");
  Outbox out;
  core_.LinkDown(kTabGateway, now_, out);
  auto done = Of(out, RouterCommand::kCallDone);
  ASSERT_THAT(done, SizeIs(2));
  for (const Outgoing* o : done) {
    EXPECT_EQ(o->link_id, kAgentGateway);
    EXPECT_EQ(o->command.call_done().failure().reason(), Failure::REASON_TAB_GONE);
  }
  // Nothing is addressed to the link that is gone; the account has no tab now.
  for (const Outgoing& o : out) {
    EXPECT_NE(o.link_id, kTabGateway);
  }
  EXPECT_EQ(Start(3, "alice")[0].command.call_done().failure().reason(), Failure::REASON_NO_TAB);
}

TEST_F(RouterCoreTest, TheAgentsGatewayLostWithCallsInFlightCancelsThemAtTheTab) {
  TabUp(kTabGateway, 5, "alice");
  uint64_t call = DeliveredCall(Start(1, "alice"));
  Outbox out;
  core_.LinkDown(kAgentGateway, now_, out);
  auto cancel = Of(out, RouterCommand::kCancel);
  ASSERT_THAT(cancel, SizeIs(1));
  EXPECT_EQ(cancel[0]->link_id, kTabGateway);
  EXPECT_EQ(cancel[0]->command.cancel().call_id(), call);
  EXPECT_THAT(Of(out, RouterCommand::kCallDone), IsEmpty());
  EXPECT_THAT(Reply(kTabGateway, 5, call, "{}"), IsEmpty());
}

TEST_F(RouterCoreTest, AShardRestartIsRebuiltFromTheReannouncement) {
  TabUp(kTabGateway, 5, "alice");
  Start(1, "alice");
  // A new router process: ids start elsewhere, the gateways link again and
  // announce their tabs and streams.
  RouterCore restarted(kFirstCall + 500000);
  restarted.LinkUp(7);
  restarted.LinkUp(8);
  Outbox out;
  GatewayEvent up;
  up.mutable_tab_up()->set_tab_id(5);
  up.mutable_tab_up()->set_account("alice");
  restarted.Handle(7, up, now_, out);
  ASSERT_THAT(Of(out, RouterCommand::kTabAccepted), SizeIs(1));
  // A tab that was at work before the restart is announced as live: routed
  // as well, and not answered (its gateway would drop the acceptance).
  out.clear();
  GatewayEvent live;
  live.mutable_tab_up()->set_tab_id(6);
  live.mutable_tab_up()->set_account("bob");
  live.mutable_tab_up()->set_live(true);
  restarted.Handle(7, live, now_, out);
  EXPECT_THAT(out, IsEmpty());
  // The old call's answer reaches nobody; a new call works.
  out.clear();
  GatewayEvent stale;
  stale.mutable_tab_reply()->set_tab_id(5);
  stale.mutable_tab_reply()->set_call_id(kFirstCall);
  restarted.Handle(7, stale, now_, out);
  EXPECT_THAT(out, IsEmpty());
  GatewayEvent start;
  start.mutable_call_start()->set_call_ref(9);
  start.mutable_call_start()->set_account("alice");
  start.mutable_call_start()->set_method("tools/call");
  restarted.Handle(8, start, now_, out);
  ASSERT_THAT(out, SizeIs(1));
  EXPECT_EQ(out[0].link_id, 7u);
  EXPECT_EQ(out[0].command.deliver().call_id(), kFirstCall + 500000);
  // And the live one is routed: bob's call goes to tab 6.
  out.clear();
  start.mutable_call_start()->set_call_ref(10);
  start.mutable_call_start()->set_account("bob");
  restarted.Handle(8, start, now_, out);
  ASSERT_THAT(out, SizeIs(1));
  EXPECT_EQ(out[0].command.deliver().tab_id(), 6u);
}

TEST_F(RouterCoreTest, TheAgentsCancellationByRequestIdReachesTheTab) {
  TabUp(kTabGateway, 5, "alice");
  uint64_t call = DeliveredCall(Start(1, "alice", "tools/call", "s1", "\"req-1\""));
  GatewayEvent foreign;
  auto* c = foreign.mutable_agent_cancel();
  c->set_account("bob");
  c->set_session_id("s1");
  c->set_request_id("\"req-1\"");
  EXPECT_THAT(Send(kAgentGateway, foreign), IsEmpty());  // another account's session
  c->set_account("alice");
  Outbox out = Send(kAgentGateway, foreign);
  ASSERT_THAT(out, SizeIs(2));
  EXPECT_EQ(out[0].command.cancel().call_id(), call);
  EXPECT_EQ(out[1].command.call_done().failure().reason(), Failure::REASON_CANCELLED);
}

TEST_F(RouterCoreTest, AReusedRequestIdCancelsTheNewestCallOnly) {
  TabUp(kTabGateway, 5, "alice");
  uint64_t older = DeliveredCall(Start(1, "alice", "tools/call", "s1", "3"));
  uint64_t newer = DeliveredCall(Start(2, "alice", "tools/call", "s1", "3"));
  // The older call ends; the index of the newer stays.
  EXPECT_THAT(Reply(kTabGateway, 5, older, "{}"), SizeIs(1));
  GatewayEvent cancel;
  cancel.mutable_agent_cancel()->set_account("alice");
  cancel.mutable_agent_cancel()->set_session_id("s1");
  cancel.mutable_agent_cancel()->set_request_id("3");
  Outbox out = Send(kAgentGateway, cancel);
  ASSERT_THAT(out, SizeIs(2));
  EXPECT_EQ(out[0].command.cancel().call_id(), newer);
}

TEST_F(RouterCoreTest, CallsInFlightPerAccountAreBounded) {
  TabUp(kTabGateway, 5, "alice");
  TabUp(kTabGateway, 6, "bob");
  for (uint64_t ref = 1; ref <= 3; ++ref) {
    ASSERT_TRUE(Start(ref, "alice")[0].command.has_deliver());
  }
  Outbox fourth = Start(4, "alice");
  EXPECT_EQ(fourth[0].command.call_done().failure().reason(), Failure::REASON_TOO_MANY_CALLS);
  // Another account is not affected; one of alice's ending makes room.
  EXPECT_TRUE(Start(5, "bob")[0].command.has_deliver());
  EXPECT_THAT(Reply(kTabGateway, 5, kFirstCall, "{}"), SizeIs(1));
  EXPECT_TRUE(Start(6, "alice")[0].command.has_deliver());
}

TEST_F(RouterCoreTest, ATabsRequestReachesTheCallsAgentAndOnlyThatSessionMayAnswer) {
  TabUp(kTabGateway, 5, "alice");
  uint64_t call = DeliveredCall(Start(1, "alice", "tools/call", "s1"));
  GatewayEvent request;
  auto* r = request.mutable_tab_request();
  r->set_tab_id(5);
  r->set_call_id(call);
  r->set_message(R"({"jsonrpc":"2.0","id":"relay/1/1","method":"elicitation/create"})");
  r->set_tab_request_id("1");
  Outbox out = Send(kTabGateway, request);
  ASSERT_THAT(out, SizeIs(1));
  EXPECT_EQ(out[0].link_id, kAgentGateway);
  EXPECT_EQ(out[0].command.call_event().call_ref(), 1u);

  GatewayEvent answer;
  auto* a = answer.mutable_agent_reply();
  a->set_account("alice");
  a->set_session_id("s2");  // another session of the same account
  a->set_call_id(call);
  a->set_tab_request_id("1");
  a->set_payload(R"({"action":"accept"})");
  EXPECT_THAT(Send(kAgentGateway, answer), IsEmpty());
  a->set_session_id("s1");
  out = Send(kAgentGateway, answer);
  ASSERT_THAT(out, SizeIs(1));
  EXPECT_EQ(out[0].link_id, kTabGateway);
  EXPECT_EQ(out[0].command.tab_response().tab_request_id(), "1");

  // Without a live call the tab is told so.
  r->set_call_id(call + 99);
  out = Send(kTabGateway, request);
  ASSERT_THAT(out, SizeIs(1));
  EXPECT_TRUE(out[0].command.tab_response().is_error());
}

TEST_F(RouterCoreTest, TheViewLineGoesOnceToEachSessionsNextToolResult) {
  TabUp(kTabGateway, 5, "alice");
  GatewayEvent touch;
  touch.mutable_session_touch()->set_session_id("s1");
  touch.mutable_session_touch()->set_account("alice");
  Send(kAgentGateway, touch);
  GatewayEvent updated;
  auto* note = updated.mutable_tab_notification();
  note->set_tab_id(5);
  note->set_method("notifications/resources/updated");
  note->set_uri("editor://view");
  note->set_line("The user switched tabs.");
  Send(kTabGateway, updated);
  uint64_t call = DeliveredCall(Start(1, "alice"));
  EXPECT_EQ(Reply(kTabGateway, 5, call, "{}")[0].command.call_done().view_line(),
            "The user switched tabs.");
  call = DeliveredCall(Start(2, "alice"));
  EXPECT_EQ(Reply(kTabGateway, 5, call, "{}")[0].command.call_done().view_line(), "");
}

// Issue 25.1: one account's tab floods list changes to its many agents.
// Beyond the account's fan-out budget its own streams are ended (they resume
// by replay), and another account's notifications still pass: nothing ends
// the link they share.
TEST(RouterCoreFanoutTest, AnAccountOverItsFanoutBudgetLosesOnlyItsOwnStreams) {
  RouterCoreOptions options;
  options.fanout_bytes_per_second = 1;
  options.fanout_burst_bytes = 10 * 1024;
  RouterCore core(kFirstCall, options);
  const absl::Time now = absl::FromUnixSeconds(1000000);
  core.LinkUp(kTabGateway);
  core.LinkUp(kAgentGateway);
  auto send = [&](uint64_t link, GatewayEvent e) {
    Outbox out;
    core.Handle(link, e, now, out);
    return out;
  };
  auto tab_up = [&](uint64_t tab, const std::string& account) {
    GatewayEvent e;
    e.mutable_tab_up()->set_tab_id(tab);
    e.mutable_tab_up()->set_account(account);
    send(kTabGateway, e);
  };
  auto open_stream = [&](uint64_t stream, const std::string& session, const std::string& account,
                         uint64_t last_event_id = 0) {
    GatewayEvent e;
    auto* open = e.mutable_stream_open();
    open->set_stream_id(stream);
    open->set_session_id(session);
    open->set_account(account);
    open->set_last_event_id(last_event_id);
    return send(kAgentGateway, e);
  };
  auto list_changed = [&](uint64_t tab) {
    GatewayEvent e;
    auto* note = e.mutable_tab_notification();
    note->set_tab_id(tab);
    note->set_method("notifications/tools/list_changed");
    note->set_params(absl::StrCat(R"({"pad":")", std::string(1000, 'x'), R"("})"));
    return send(kTabGateway, e);
  };
  auto count = [](const Outbox& out, RouterCommand::CommandCase kind) {
    return std::count_if(out.begin(), out.end(),
                         [&](const Outgoing& o) { return o.command.command_case() == kind; });
  };
  tab_up(5, "alice");
  tab_up(6, "bob");
  for (uint64_t i = 1; i <= 3; ++i) {
    open_stream(i, absl::StrCat("a", i), "alice");
  }
  open_stream(9, "b1", "bob");

  // Three streams take ~3.2 KB an event: three events fit the 10 KiB burst.
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(count(list_changed(5), RouterCommand::kStreamEvent), 3) << i;
  }
  Outbox over = list_changed(5);
  EXPECT_EQ(count(over, RouterCommand::kStreamEvent), 0);
  EXPECT_EQ(count(over, RouterCommand::kStreamEnd), 3);
  EXPECT_EQ(core.counts().streams_cut, 3u);
  // Cut streams hear nothing more until their agents reconnect...
  EXPECT_EQ(count(list_changed(5), RouterCommand::kStreamEnd), 0);
  // ... bob's stream is another account's budget, and still hears his tab.
  EXPECT_EQ(count(list_changed(6), RouterCommand::kStreamEvent), 1);
  // An agent that reconnects with Last-Event-ID gets what its stream missed.
  Outbox resumed = open_stream(11, "a1", "alice", /*last_event_id=*/3);
  EXPECT_EQ(count(resumed, RouterCommand::kStreamEvent), 2);
}

// A 2026-07-28 listen stream is acknowledged to its agent only when the
// router has it (the gateway asks with confirm): the confirmation comes back
// on the stream's link, and what the tab sends from then on reaches it.
TEST_F(RouterCoreTest, AConfirmedStreamIsConfirmedOnItsLinkAndHearsWhatFollows) {
  TabUp(kTabGateway, 5, "alice");
  GatewayEvent subscribe;
  auto* sub = subscribe.mutable_session_subscribe();
  sub->set_session_id("l.key.1.1");
  sub->set_account("alice");
  sub->set_uri("doc://outline");
  sub->set_subscribe(true);
  EXPECT_THAT(Send(kAgentGateway, subscribe), IsEmpty());
  GatewayEvent open;
  open.mutable_stream_open()->set_stream_id(7);
  open.mutable_stream_open()->set_session_id("l.key.1.1");
  open.mutable_stream_open()->set_account("alice");
  open.mutable_stream_open()->set_confirm(true);
  Outbox opened = Send(kAgentGateway, open);
  ASSERT_FALSE(opened.empty());
  EXPECT_EQ(opened[0].link_id, kAgentGateway);
  EXPECT_EQ(opened[0].command.stream_opened().stream_id(), 7u);
  GatewayEvent updated;
  updated.mutable_tab_notification()->set_tab_id(5);
  updated.mutable_tab_notification()->set_method("notifications/resources/updated");
  updated.mutable_tab_notification()->set_uri("doc://outline");
  Outbox fanned = Send(kTabGateway, updated);
  auto events = Of(fanned, RouterCommand::kStreamEvent);
  ASSERT_THAT(events, SizeIs(1));
  EXPECT_EQ(events[0]->command.stream_event().stream_id(), 7u);
  // A stream announced again after a relink (no confirm) is not confirmed twice.
  open.mutable_stream_open()->set_confirm(false);
  EXPECT_THAT(Of(Send(kAgentGateway, open), RouterCommand::kStreamOpened), IsEmpty());
}

TEST_F(RouterCoreTest, AnEndedSessionsCallsFailAndEveryGatewayHears) {
  TabUp(kTabGateway, 5, "alice");
  Outbox out;
  core_.EndSession("s1", out);
  EXPECT_THAT(Of(out, RouterCommand::kSessionEnded), SizeIs(2));
  Outbox start = Start(1, "alice", "tools/call", "s1");
  EXPECT_EQ(start[0].command.call_done().failure().reason(), Failure::REASON_SESSION_ENDED);
}

TEST_F(RouterCoreTest, ProgressOfACallReachesItsAgentOnly) {
  TabUp(kTabGateway, 5, "alice");
  GatewayEvent start;
  auto* s = start.mutable_call_start();
  s->set_call_ref(3);
  s->set_account("alice");
  s->set_method("tools/call");
  s->set_progress_token("relay-p-1");
  Send(kAgentGateway, start);
  GatewayEvent progress;
  auto* note = progress.mutable_tab_notification();
  note->set_tab_id(5);
  note->set_method("notifications/progress");
  note->set_progress_token("relay-p-1");
  note->set_params(R"({"progressToken":"relay-p-1","progress":1})");
  Outbox out = Send(kTabGateway, progress);
  ASSERT_THAT(out, SizeIs(1));
  EXPECT_EQ(out[0].command.call_event().call_ref(), 3u);
  EXPECT_NE(out[0].command.call_event().message().find("\"progress\":1"), std::string::npos);
}

}  // namespace
}  // namespace relay::router

namespace relay::router {
namespace {

using relay::v1::WatchEvent;

// "kind account gateway tab reason" of each event, for readable expectations.
std::vector<std::string> Lines(const std::vector<WatchEvent>& events) {
  std::vector<std::string> lines;
  for (const WatchEvent& e : events) {
    lines.push_back(absl::StrCat(WatchEvent::Kind_Name(e.kind()), " ", e.account(), " ",
                                 e.gateway_id(), " ", e.tab_id(), " ", e.session_id(),
                                 e.trace_id(), " ", e.reason()));
  }
  return lines;
}

TEST_F(RouterCoreTest, UnwatchedTheCoreRecordsNothing) {
  TabUp(kTabGateway, 5, "alice");
  Start(1, "nobody");
  EXPECT_THAT(core_.TakeWatchEvents(), IsEmpty());
}

TEST_F(RouterCoreTest, WatchersSeeLinksTabsSessionsAndFailedCalls) {
  core_.set_watched(true);
  GatewayEvent hello;
  hello.mutable_hello()->set_gateway_id("gw-a");
  Send(kTabGateway, hello);
  hello.mutable_hello()->set_gateway_id("gw-b");
  Send(kAgentGateway, hello);
  TabUp(kTabGateway, 5, "alice");
  TabUp(kAgentGateway, 9, "alice");  // displaces tab 5
  GatewayEvent touch;
  touch.mutable_session_touch()->set_session_id("s1");
  touch.mutable_session_touch()->set_account("alice");
  Send(kAgentGateway, touch);
  Send(kAgentGateway, touch);  // seen before: no second "opened"
  GatewayEvent start;
  start.mutable_call_start()->set_call_ref(1);
  start.mutable_call_start()->set_account("bob");
  start.mutable_call_start()->set_trace_id("gw-b-1");
  Send(kAgentGateway, start);
  Outbox out;
  core_.EndSession("s1", out);
  core_.EndSession("s1", out);  // ended already: no second event
  Send(kAgentGateway, touch);   // a touch that raced the end opens nothing
  GatewayEvent down;
  down.mutable_tab_down()->set_tab_id(9);
  Send(kAgentGateway, down);
  core_.LinkDown(kTabGateway, now_, out);

  EXPECT_THAT(Lines(core_.TakeWatchEvents()),
              ::testing::ElementsAre(
                  "LINK_UP  gw-a 0  ", "LINK_UP  gw-b 0  ", "TAB_UP alice gw-a 5  ",
                  "TAB_UP alice gw-b 9  ",
                  "TAB_DISPLACED alice gw-a 5  another tab switched the agent on",
                  "SESSION_OPENED alice  0 s1 ", "CALL_FAILED bob  0 gw-b-1 no_tab",
                  "SESSION_ENDED alice  0 s1 ", "TAB_DOWN alice gw-b 9  the tab disconnected",
                  "LINK_DOWN  gw-a 0  "));
  EXPECT_THAT(core_.TakeWatchEvents(), IsEmpty());
}

TEST_F(RouterCoreTest, AKickIsWatchedAsADisplacementWithTheOperatorsReason) {
  TabUp(kTabGateway, 5, "alice");
  core_.set_watched(true);
  Outbox out;
  ASSERT_TRUE(core_.Kick("alice", "an operator disconnected this tab", out));
  EXPECT_THAT(Lines(core_.TakeWatchEvents()),
              ::testing::ElementsAre("TAB_DISPLACED alice  5  an operator disconnected this tab"));
}

TEST_F(RouterCoreTest, ACallLostWithItsTabIsWatchedWithItsTrace) {
  TabUp(kTabGateway, 5, "alice");
  GatewayEvent start;
  start.mutable_call_start()->set_call_ref(1);
  start.mutable_call_start()->set_account("alice");
  start.mutable_call_start()->set_trace_id("gw-b-7");
  Outbox delivered = Send(kAgentGateway, start);
  EXPECT_EQ(Of(delivered, RouterCommand::kDeliver)[0]->command.deliver().trace_id(), "gw-b-7");
  core_.set_watched(true);
  GatewayEvent down;
  down.mutable_tab_down()->set_tab_id(5);
  Send(kTabGateway, down);
  EXPECT_THAT(Lines(core_.TakeWatchEvents()),
              ::testing::ElementsAre("TAB_DOWN alice  5  the tab disconnected",
                                     "CALL_FAILED alice  0 gw-b-7 tab_gone"));
}

// --- 2026-07-28 calls: multi round-trip requests across gateways ---------------

class StatelessCallTest : public RouterCoreTest {
 protected:
  static constexpr uint64_t kOtherGateway = 3;  // where the agent's retry lands

  StatelessCallTest() {
    core_.LinkUp(kOtherGateway);
    TabUp(kTabGateway, 5, "alice");
    GatewayEvent e;
    auto* start = e.mutable_call_start();
    start->set_call_ref(41);
    start->set_account("alice");
    start->set_session_id("t.key");
    start->set_method("tools/call");
    start->set_stateless(true);
    call_ = DeliveredCall(Send(kAgentGateway, e));
  }

  Outbox Ask(const std::string& tab_request_id) {
    GatewayEvent e;
    auto* request = e.mutable_tab_request();
    request->set_tab_id(5);
    request->set_call_id(call_);
    request->set_tab_request_id(tab_request_id);
    request->set_message(absl::StrCat("ask ", tab_request_id));
    return Send(kTabGateway, e);
  }

  Outbox Park(uint64_t link, uint64_t ref, uint32_t ttl_ms = 30000, uint32_t round = 1) {
    GatewayEvent e;
    e.mutable_call_park()->set_call_ref(ref);
    e.mutable_call_park()->set_ttl_ms(ttl_ms);
    e.mutable_call_park()->set_round(round);
    return Send(link, e);
  }

  Outbox Resume(uint64_t link, uint64_t ref, const std::string& account,
                std::vector<std::pair<std::string, std::string>> answers, uint32_t round = 1) {
    GatewayEvent e;
    auto* resume = e.mutable_call_resume();
    resume->set_round(round);
    resume->set_call_ref(ref);
    resume->set_account(account);
    resume->set_call_id(call_);
    for (const auto& [id, payload] : answers) {
      auto* answer = resume->add_answers();
      answer->set_tab_request_id(id);
      answer->set_payload(payload);
    }
    return Send(link, e);
  }

  uint64_t call_ = 0;
};

TEST_F(StatelessCallTest, ARetryOnAnotherGatewayAnswersTheTabAndGetsTheResult) {
  Outbox asked = Ask(R"("user_name")");
  ASSERT_THAT(asked, SizeIs(1));
  EXPECT_EQ(asked[0].link_id, kAgentGateway);
  EXPECT_EQ(asked[0].command.call_event().message(), R"(ask "user_name")");

  EXPECT_THAT(Park(kAgentGateway, 41), IsEmpty());
  Outbox resumed = Resume(kOtherGateway, 77, "alice", {{R"("user_name")", R"({"action":"accept"})"}});
  ASSERT_THAT(resumed, SizeIs(1));
  EXPECT_EQ(resumed[0].link_id, kTabGateway);
  EXPECT_EQ(resumed[0].command.tab_response().tab_request_id(), R"("user_name")");
  EXPECT_EQ(resumed[0].command.tab_response().payload(), R"({"action":"accept"})");

  // The call now answers to the retry's gateway and call ref.
  Outbox done = Reply(kTabGateway, 5, call_, R"({"content":[]})");
  ASSERT_THAT(done, SizeIs(1));
  EXPECT_EQ(done[0].link_id, kOtherGateway);
  EXPECT_EQ(done[0].command.call_done().call_ref(), 77u);
}

TEST_F(StatelessCallTest, RequestsMadeWhileParkedAndUnansweredOnesAreAskedOnTheRetry) {
  Ask(R"("first")");
  Park(kAgentGateway, 41);
  EXPECT_THAT(Ask(R"("second")"), IsEmpty());  // nobody waits: kept for the retry
  Outbox resumed = Resume(kOtherGateway, 77, "alice", {{R"("first")", "{}"}});
  ASSERT_THAT(Of(resumed, RouterCommand::kTabResponse), SizeIs(1));
  auto events = Of(resumed, RouterCommand::kCallEvent);
  ASSERT_THAT(events, SizeIs(1));
  EXPECT_EQ(events[0]->link_id, kOtherGateway);
  EXPECT_EQ(events[0]->command.call_event().call_ref(), 77u);
  EXPECT_EQ(events[0]->command.call_event().message(), R"(ask "second")");
}

TEST_F(StatelessCallTest, AnotherAccountsOrASecondRetryGetsNotPending) {
  Ask("1");
  Park(kAgentGateway, 41);
  Outbox foreign = Resume(kOtherGateway, 77, "mallory", {{"1", "{}"}});
  ASSERT_THAT(foreign, SizeIs(1));
  EXPECT_EQ(foreign[0].link_id, kOtherGateway);
  EXPECT_EQ(foreign[0].command.call_done().failure().reason(), Failure::REASON_NOT_PENDING);
  // The call is still parked for its own agent.
  EXPECT_THAT(Of(Resume(kOtherGateway, 78, "alice", {{"1", "{}"}}), RouterCommand::kTabResponse),
              SizeIs(1));
  // Resumed already: a replayed retry is refused and reaches no tab.
  Outbox replay = Resume(kAgentGateway, 79, "alice", {{"1", "{}"}});
  ASSERT_THAT(replay, SizeIs(1));
  EXPECT_EQ(replay[0].command.call_done().failure().reason(), Failure::REASON_NOT_PENDING);
}

TEST_F(StatelessCallTest, OnlyTheRetryOfTheWaitingRoundResumes) {
  Ask("1");
  Park(kAgentGateway, 41, 30000, /*round=*/1);
  ASSERT_THAT(Of(Resume(kOtherGateway, 77, "alice", {{"1", "{}"}}, 1), RouterCommand::kTabResponse),
              SizeIs(1));
  Ask("2");
  Park(kOtherGateway, 77, 30000, /*round=*/2);
  // A duplicate of round 1's retry does not take round 2's question.
  Outbox stale = Resume(kAgentGateway, 78, "alice", {}, 1);
  ASSERT_THAT(stale, SizeIs(1));
  EXPECT_EQ(stale[0].command.call_done().failure().reason(), Failure::REASON_NOT_PENDING);
  EXPECT_THAT(Of(Resume(kAgentGateway, 79, "alice", {{"2", "{}"}}, 2), RouterCommand::kTabResponse),
              SizeIs(1));
}

TEST_F(StatelessCallTest, ARetryMayOvertakeItsRoundsPark) {
  Ask("1");
  // The retry arrives by another link before the asking gateway's CallPark.
  Outbox resumed = Resume(kOtherGateway, 77, "alice", {{"1", "{}"}}, 1);
  ASSERT_THAT(Of(resumed, RouterCommand::kTabResponse), SizeIs(1));
  EXPECT_THAT(Park(kAgentGateway, 41, 30000, 1), IsEmpty());  // stale: ignored
  Outbox done = Reply(kTabGateway, 5, call_, "{}");
  ASSERT_THAT(done, SizeIs(1));
  EXPECT_EQ(done[0].link_id, kOtherGateway);
}

TEST_F(StatelessCallTest, ARequestTheAgentsGatewayAnsweredIsNotAskedAgain) {
  Ask("1");
  Ask("2");
  // The gateway refused "2" to the tab (a capability the agent lacks).
  GatewayEvent refusal;
  auto* reply = refusal.mutable_agent_reply();
  reply->set_account("alice");
  reply->set_session_id("t.key");
  reply->set_call_id(call_);
  reply->set_tab_request_id("2");
  reply->set_is_error(true);
  EXPECT_THAT(Of(Send(kAgentGateway, refusal), RouterCommand::kTabResponse), SizeIs(1));
  EXPECT_THAT(Send(kAgentGateway, refusal), IsEmpty());  // once
  Park(kAgentGateway, 41);
  Outbox resumed = Resume(kOtherGateway, 77, "alice", {{"1", "{}"}});
  EXPECT_THAT(Of(resumed, RouterCommand::kCallEvent), IsEmpty());
}

TEST_F(StatelessCallTest, AParkedCallExpiresAndItsTabIsTold) {
  Ask("1");
  Park(kAgentGateway, 41, /*ttl_ms=*/1000);
  Outbox early;
  core_.Sweep(now_ + absl::Milliseconds(500), early);
  EXPECT_THAT(Of(early, RouterCommand::kCancel), IsEmpty());
  Outbox late;
  core_.Sweep(now_ + absl::Seconds(2), late);
  auto cancels = Of(late, RouterCommand::kCancel);
  ASSERT_THAT(cancels, SizeIs(1));
  EXPECT_EQ(cancels[0]->link_id, kTabGateway);
  EXPECT_EQ(cancels[0]->command.cancel().call_id(), call_);
  EXPECT_EQ(core_.CallsInFlight(), 0u);
  EXPECT_EQ(Resume(kOtherGateway, 77, "alice", {})[0].command.call_done().failure().reason(),
            Failure::REASON_NOT_PENDING);
}

TEST_F(StatelessCallTest, AParkedCallsTabLeavingSendsNothingToAnyGateway) {
  Park(kAgentGateway, 41);
  GatewayEvent down;
  down.mutable_tab_down()->set_tab_id(5);
  EXPECT_THAT(Of(Send(kTabGateway, down), RouterCommand::kCallDone), IsEmpty());
  EXPECT_EQ(Resume(kOtherGateway, 77, "alice", {})[0].command.call_done().failure().reason(),
            Failure::REASON_NOT_PENDING);
}

// Issue 25.4: the tab answers while its call is parked between rounds. The
// answer is the retry's result (once, for its own account only), not "call
// again", which would run the tool a second time.
TEST_F(StatelessCallTest, TheTabsFinalAnswerWhileParkedIsTheRetrysResult) {
  Ask("1");
  Park(kAgentGateway, 41);
  EXPECT_THAT(Reply(kTabGateway, 5, call_, R"({"content":[{"type":"text","text":"done"}]})"),
              IsEmpty());
  Outbox foreign = Resume(kOtherGateway, 76, "mallory", {{"1", "{}"}});
  EXPECT_EQ(foreign[0].command.call_done().failure().reason(), Failure::REASON_NOT_PENDING);
  Outbox retry = Resume(kOtherGateway, 77, "alice", {{"1", "{}"}});
  ASSERT_THAT(retry, SizeIs(1));
  EXPECT_EQ(retry[0].link_id, kOtherGateway);
  EXPECT_EQ(retry[0].command.call_done().call_ref(), 77u);
  EXPECT_EQ(retry[0].command.call_done().result(), R"({"content":[{"type":"text","text":"done"}]})");
  EXPECT_EQ(Resume(kOtherGateway, 78, "alice", {})[0].command.call_done().failure().reason(),
            Failure::REASON_NOT_PENDING);
}

// ... and in the moment before the router has the park: the asking gateway
// has already answered input_required and drops the CallDone it gets.
TEST_F(StatelessCallTest, AnAnswerThatOvertookTheParkIsTheRetrysResultToo) {
  Ask("1");
  Outbox early = Reply(kTabGateway, 5, call_, R"({"isError":true,"content":[]})", /*is_error=*/false);
  ASSERT_THAT(Of(early, RouterCommand::kCallDone), SizeIs(1));
  EXPECT_THAT(Park(kAgentGateway, 41), IsEmpty());  // the call is gone: nothing to park
  Outbox retry = Resume(kOtherGateway, 77, "alice", {{"1", "{}"}});
  ASSERT_THAT(retry, SizeIs(1));
  EXPECT_EQ(retry[0].command.call_done().result(), R"({"isError":true,"content":[]})");
}

TEST_F(StatelessCallTest, AKeptAnswerLastsAsLongAsThePark) {
  Ask("1");
  Park(kAgentGateway, 41, /*ttl_ms=*/1000);
  Reply(kTabGateway, 5, call_, "{}");
  Outbox swept;
  core_.Sweep(now_ + absl::Seconds(2), swept);
  EXPECT_THAT(Of(swept, RouterCommand::kCancel), IsEmpty());  // answered: nothing to cancel
  EXPECT_EQ(Resume(kOtherGateway, 77, "alice", {})[0].command.call_done().failure().reason(),
            Failure::REASON_NOT_PENDING);
}

TEST_F(StatelessCallTest, ATabMayKeepOnlySoManyRequestsWaiting) {
  for (int i = 0; i < 8; ++i) {
    EXPECT_THAT(Of(Ask(absl::StrCat(i)), RouterCommand::kCallEvent), SizeIs(1));
  }
  Outbox refused = Ask("8");
  ASSERT_THAT(refused, SizeIs(1));
  EXPECT_EQ(refused[0].link_id, kTabGateway);
  EXPECT_TRUE(refused[0].command.tab_response().is_error());
}

}  // namespace
}  // namespace relay::router
