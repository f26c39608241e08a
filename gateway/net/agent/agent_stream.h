#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/ip/tcp.hpp>

#include "gateway/core/listen_filter.h"
#include "gateway/net/gateway_state.h"
#include "gateway/net/agent/response_writer.h"

namespace relay::gateway {

// An agent's long-lived stream (the GET of a 2025 session, or a 2026-07-28
// subscriptions/listen, whose ListenFilter picks and tags what it carries and
// which ends with the listen request's result): an SSE response
// that carries the session's notifications and requests from the router until
// the agent goes away, the session ends, or the gateway stops. Takes over the
// connection from the HttpSession that read the GET; the connection closes
// when the stream ends.
//
// Runs on the connection's I/O thread; other threads use the Post* methods.
// Lives as long as its pending operations.
class AgentStream : public std::enable_shared_from_this<AgentStream>, public WriterOwner {
 public:
  // listen: a 2026-07-28 subscriptions/listen stream (its session is the
  // relay's own, for the router's fan-out), with what it asked to hear.
  // token_sha256: the bearer's SHA-256 (hex), so that its revocation ends the stream.
  AgentStream(boost::asio::ip::tcp::socket&& socket, const StreamServices& services,
              ConnectionSlot slot, std::string account, std::string role, std::string session,
              std::string token_sha256, std::optional<ListenFilter> listen = std::nullopt);

  // On its I/O thread: registers the stream, answers the GET, tells the router
  // (which replays what came after last_event_id). revocation_mark: the revocations heard
  // when its verdict was looked up (AgentAdmission::revocation_mark).
  void Run(uint64_t last_event_id, uint64_t revocation_mark);

  // A message for the session, from the router.
  void PostEvent(uint64_t event_id, std::string message);
  // The router fans out to this stream now (it asked for the confirmation):
  // a listen stream is acknowledged to its agent.
  void PostOpened();
  // A notification of this gateway's own (the catalogue changed).
  void PostNotice(std::string message);
  // The token's role (immutable: any thread).
  const std::string& role() const { return role_; }
  // The router shard of its account (immutable: any thread), so that a link's
  // fan-out skips the streams of other shards without a hand-over each.
  size_t shard() const { return shard_; }
  // On its own thread (a link's fan-out, GatheredPosts::FanOut): the link to
  // shard came back; announce the stream again if its account is there.
  void Reannounce(size_t shard);
  boost::asio::any_io_executor executor() { return socket_.get_executor(); }
  // The session was ended (DELETE): if this is its stream, it ends.
  void PostSessionEnded(std::string session);
  // The stream ends: the gateway stops (no reason), or the router cut it
  // with a reason (its account fanned out more than its budget): a GET
  // stream's agent resumes by reconnecting with Last-Event-ID, a listen
  // stream ends with an error saying to listen again.
  void PostEnd(std::string reason = "");
  // authsvc revoked a token or a user: the stream ends if it was opened with
  // that token or by that user (its agent hears 401 when it reconnects).
  void PostRevoked(const Revocation& revoked);

  // WriterOwner.
  std::shared_ptr<void> KeepAlive() override { return shared_from_this(); }
  void OnResponseWritten(AfterResponse next) override;
  void OnWriteFailed() override;

 private:
  // Notices the agent going away: any read completing with an error.
  void WatchPeer();
  // Ends the response and the connection (a listen stream with an error
  // when there is a reason).
  void End(absl::string_view reason = "");
  // Tells the router the stream is gone (once).
  void Unregister();
  // A listen stream's resources, subscribed at the router before it opens.
  void AnnounceSubscriptions();

  // A plain socket, not the Beast stream that read the GET: a stream has no use for Beast's
  // three timers (some 500 bytes per stream, tens of thousands of streams per gateway).
  boost::asio::ip::tcp::socket socket_;
  const StreamServices& services_;
  ConnectionSlot slot_;
  const std::string account_;
  const size_t shard_;
  const std::string role_;  // the token's: which catalogue changes this stream hears of
  const std::string session_;
  const std::string token_sha256_;
  const std::optional<ListenFilter> listen_;
  ResponseWriter out_;
  uint64_t stream_id_ = 0;
  // A listen stream's acknowledgement is sent (when the router confirmed the
  // stream; until then, what would be passed on is not heard).
  bool acknowledged_ = false;
  bool ending_ = false;   // the last chunk is queued: nothing more is
  bool ended_ = false;    // written, or the connection is gone
  bool closing_ = false;  // the last chunk is written; the watch is being stopped
};

}  // namespace relay::gateway
