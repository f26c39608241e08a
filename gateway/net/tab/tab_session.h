#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include <chrono>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "absl/strings/string_view.h"
#include "gateway/core/jsonrpc.h"
#include "gateway/core/rate_limiter.h"
#include "gateway/core/router_events.h"
#include "gateway/core/tab_calls.h"
#include "gateway/net/gateway_state.h"
#include "gateway/net/tab/tab_reader.h"
#include "gateway/net/tab/tab_writer.h"
#include "gateway/core/auth_client.h"
#include "gateway/core/router_client.h"

namespace relay::gateway {

// One browser tab's WebSocket (TAB-PROTOCOL.md). Runs on its I/O thread: every
// member is touched only there; other threads call the Post* methods, which
// post to that thread. Lives as long as its pending operations.
class TabSession : public std::enable_shared_from_this<TabSession>,
                   public TabReader::Owner,
                   public TabWriter::Owner {
 public:
  TabSession(boost::asio::ip::tcp::socket&& socket, const TabServices& services,
             ConnectionSlot slot);

  // Completes the upgrade the HTTP session read and checked (RequestGate).
  void Run(absl::string_view ws_key);

  void PostAccepted(uint32_t agents);
  void PostDeliver(uint64_t call_id, std::string method, std::string params);
  void PostCancel(uint64_t call_id, std::string reason);
  void PostDisplace(std::string reason);
  void PostAgents(uint32_t count);
  // The agent's (or the relay's) answer to one of the tab's requests.
  void PostResponse(std::string tab_request_id, bool is_error, std::string payload);
  void PostLinkDown(size_t shard);
  // On its own thread (a link's fan-out, GatheredPosts::FanOut): the link to
  // shard came back; announce the tab again if its account is there.
  void Reannounce(size_t shard);
  boost::asio::any_io_executor executor() { return socket_.get_executor(); }
  // The router shard of its account once that is known (it never changes
  // after; set before the tab is registered), kNoShard before; any thread. A link's fan-out skips the tabs of
  // other shards without a hand-over each: with S shards a link that comes
  // back touches a tab in S, not every tab of the gateway.
  static constexpr size_t kNoShard = ~size_t{0};
  size_t shard() const { return shard_.load(std::memory_order_relaxed); }
  // Any thread: whether the tab may hold a call of the router's (one handed
  // over and not yet run, or one it has). A link's end has nothing to tell a
  // tab that holds none: on a full gateway most are idle, and an item each
  // held the thread that runs the link for 9 ms. Never false while a call
  // handed over before it was asked (on the link's thread) is held.
  bool MayHoldCalls() const {
    return deliveries_pending_.load() > 0 || holds_calls_.load();
  }
  // The gateway's drain: the tab answers the calls it has, takes no new one,
  // and is closed with 1001 once it has none.
  void PostDrain();
  // Shutdown: close with 1001 so the tab reconnects elsewhere.
  void PostGoingAway();
  // authsvc revoked every token of user (the password changed, the account
  // was deleted or renamed): a tab of that account is closed with 4403, which
  // tells the page to sign in again.
  void PostSignedOut(std::string user);

  // TabReader::Owner (with the frames' visitor) and TabWriter::Owner.
  std::shared_ptr<void> KeepAlive() override { return shared_from_this(); }
  void OnWsText(std::string text) override;
  void OnWsPing(absl::string_view payload) override;
  void OnWsClose(uint16_t code, absl::string_view reason) override;
  void OnWsFailure(WsFailure failure, absl::string_view why) override;
  void OnTabReadEnded(boost::system::error_code ec) override;
  void OnTabWriterDone() override;
  void OnTabCloseSent() override;
  void OnTabWritten(uint64_t written) override;

 private:
  enum class State { kAwaitingHello, kRedeeming, kAnnouncing, kLive, kClosing };

  // The one timer a tab has, for what its phase waits for: the hello, the
  // keep-alive's next look, the peer's close frame. An earlier arming's
  // handler finds the count moved on and does nothing.
  void ArmTimer(std::chrono::steady_clock::duration after, void (TabSession::*then)());
  // The hello timeout (TAB-PROTOCOL.md: 4408), from now; OnHelloTimeout when it passes.
  void ArmHelloTimer();
  void OnHelloTimeout();
  // Live: a tab heard from since the last look is fine; one that was not
  // gets a ping; one that did not answer it either is dropped.
  void OnKeepAlive();
  // The hello's error answer, then the close.
  void RefuseHello(int rpc_code, absl::string_view message, uint16_t close_code,
                   absl::string_view reason);
  // The hello brought a resume credential instead of a ticket.
  void Resume(absl::string_view credential);
  // The account is known (redeemed or resumed): registered and announced.
  void Admit();
  // relay/resume: a credential for the tab's next connection, signed now.
  void SendResume();
  // Closing: the tab did not answer the close frame in time.
  void OnCloseTimeout();
  // Ends the connection now (socket closed, timer cancelled).
  void End();
  void HandleMessage(absl::string_view text);
  void HandleHello(absl::string_view text);
  void OnRedeemed(AuthVerdict verdict);
  void HandleLive(absl::string_view text);
  // A message nested deeper than --max_json_depth.
  void RefuseTooDeep(absl::string_view text);
  // An answer to call id the relay cannot pass on: the call ends with an
  // error saying what was wrong. False when id names no call in flight.
  bool EndCallUnreadable(const nlohmann::json& id, absl::string_view what);
  void HandleNotification(RpcMessage& message);
  void HandleRequestToAgent(RpcMessage& message);
  // TabUp for this tab, to its account's shard.
  void Announce();
  // The tab's answer to call_id, to its account's shard.
  void Reply(uint64_t call_id, bool is_error, std::string payload);

  // Gives up every call the tab has: those it was sent are cancelled there
  // (notifications/cancelled), so that an agent's retry never runs beside a
  // forgotten first run (ARCHITECTURE.md "Faults").
  void CancelAll(absl::string_view reason);
  void Send(std::string text);
  // Sends what is queued, then closes with code; the tab's close frame, or
  // the close timeout, ends the connection.
  void CloseWith(uint16_t code, absl::string_view reason);
  void Cleanup();
  // Draining, with no call left: close with 1001.
  void MaybeEndDrain();
  // A call of the router's, on the tab's thread (PostDeliver).
  void Deliver(uint64_t call_id, std::string method, std::string params);
  void NoteCalls() { holds_calls_.store(!calls_.empty()); }

  boost::asio::ip::tcp::socket socket_;
  const TabServices& services_;
  ConnectionSlot slot_;
  TabReader in_;
  TabWriter out_;
  boost::asio::steady_timer timer_;
  uint32_t timer_armed_ = 0;  // armings so far
  uint64_t last_pong_ = 0;     // the writer's number of the last pong queued
  bool pinged_ = false;        // the keep-alive's ping is unanswered
  bool peer_closed_ = false;   // the tab's close frame came
  bool close_sent_ = false;    // ours is written
  bool read_ended_ = false;    // the tab's end of stream (or an error) was read
  // Notifications toward agents, so that a runaway tab cannot flood the
  // links and the agents' streams: 1,000 a second, bursts of 2,000.
  RateLimiter notifications_{1000, 2000};
  uint64_t dropped_notifications_ = 0;
  bool cleaned_up_ = false;
  State phase_ = State::kAwaitingHello;
  std::atomic<size_t> shard_{kNoShard};  // set once, on its thread: see shard()
  // See MayHoldCalls(): deliveries handed over and not yet run (counted up on
  // the link's thread, down by the delivery once it has run), and whether
  // calls_ held any at its thread's last look (NoteCalls, after each change).
  std::atomic<uint32_t> deliveries_pending_{0};
  std::atomic<bool> holds_calls_{false};
  bool announced_ = false;
  bool counted_ = false;  // in the gateway's tab gauge
  bool draining_ = false;
  uint64_t tab_id_ = 0;
  TabAnnouncement announcement_;  // what the router is told of this tab
  absl::Time resume_signed_;      // when the tab's last relay/resume was signed
  absl::Time signed_in_;  // when its ticket was sent to be redeemed (TabResume::signed_in)
  std::string hello_id_;  // the hello's id, as JSON text
  TabCalls calls_;
};

}  // namespace relay::gateway
