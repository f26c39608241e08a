#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/link/link_tls.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace relay::common {

// One end of a link between a gateway and a router shard: a TCP connection
// (under TLS when configured, common/link/link_socket.h) carrying
// length-prefixed frames both ways (common/link/link_frame.h), with its own
// liveness (a ping every second; a peer silent, or taking none of our bytes,
// for 3 s is down). It runs on one io_context: the hooks below run on its
// thread, one at a time.
//
// Its life is one state, moved forward only:
//   kConnecting  resolving, connecting, the TLS handshake (client: Connect;
//                server: accepted by a LinkListener)
//   kOpening     the transport is up and OnOpened has run; the peer has not
//                spoken yet (its first frame ends the 10 s open deadline)
//   kOpen        the peer has spoken
//   kClosed      by either side, a failure or Close; OnClosed has run
//
// Writes are batched: Wake() asks for a write round, which takes everything
// FillWrite() has ready into one write; while the socket is full, what
// becomes ready waits for the next round. Close() does not flush: a caller
// that must not lose what it wrote waits for Delivered() first (the drain).
// Subclasses are the two ends of LinkEndpoint (common/link/link_endpoint.h).
//
// Owned by shared_ptr: every pending operation holds one, so a channel lives
// until it is closed and its last handler has run.
class LinkChannel : public std::enable_shared_from_this<LinkChannel> {
 public:
  enum class State { kConnecting, kOpening, kOpen, kClosed };

  virtual ~LinkChannel();
  LinkChannel(const LinkChannel&) = delete;
  LinkChannel& operator=(const LinkChannel&) = delete;

  // Client side, any thread: resolves, connects, handshakes, then OnOpened.
  // A failure closes the channel (OnClosed with UNAVAILABLE).
  void Connect(const std::string& host, const std::string& port);
  // Any thread: a write round soon, unless one is already due.
  void Wake();
  // Any thread: closes soon (what is unwritten is lost); OnClosed follows on
  // the channel's thread, never inside Close, unless it was closed before.
  void Close(absl::Status why);
  // A write is in flight.
  bool writing() const { return writing_.load(std::memory_order_acquire); }
  // Any thread: everything written has been acknowledged by the peer's
  // kernel (or the channel is closed), so that closing it now loses nothing.
  bool Delivered() const;
  // Any thread: reading goes on after ReadPaused() stopped it.
  void ResumeReading();

 protected:
  // tls: null for plaintext.
  LinkChannel(boost::asio::io_context& io, std::shared_ptr<LinkTls> tls);

  // Connected and, under TLS, the handshake done (peer_role() is known). An
  // error closes the channel at once, with it.
  virtual absl::Status OnOpened() = 0;
  // A whole frame, valid during the call only. An error closes the channel at
  // once, with it.
  virtual absl::Status OnFrame(absl::string_view frame) = 0;
  // Appends the frames to write next; false when nothing waits.
  virtual bool FillWrite(std::string& out) = 0;
  // Asked on the channel's thread before each read once open: true stops
  // reading (the peer's bytes wait in the kernel, then in the peer) until
  // ResumeReading. The link's liveness keeps watching the peer taking our
  // bytes meanwhile.
  virtual bool ReadPaused() { return false; }
  // Whether a peer that takes none of our bytes for the liveness bound while
  // some wait is hung. The router's side: a gateway must read its link. Not
  // the gateway's: a router that pauses reading (it is backed up) still
  // pings, and its silence is what shows it hung.
  virtual bool EndsOnWriteStall() const { return true; }
  // Once, when the channel has closed (by either side, or by Close).
  virtual void OnClosed(const absl::Status& status) = 0;

  // The common name of the peer's certificate (its role); empty over plaintext.
  const std::string& peer_role() const;
  // The peer's address, for logs.
  std::string peer() const;
  bool tls() const { return tls_ != nullptr; }

 private:
  friend class LinkListener;
  struct Io;  // common/link/link_channel_io.h

  // On the channel's thread.
  void Adopt();  // server side: the socket is accepted
  // The open deadline (kOpenTimeout): closes the channel, saying why in the
  // words of its state, unless the peer has spoken by then.
  void ArmOpenDeadline(const char* if_connecting, const char* if_opening);
  void Handshake(bool server);
  void ContinueHandshake();
  // Once the socket is readable (or writable), next; unless closed meanwhile.
  void WaitThen(bool readable, const char* doing, void (LinkChannel::*next)());
  void Opened();
  // Reads until the socket has no more, handing out whole frames.
  void ReadReady();
  // Hands out the whole frames read; false once the channel has closed.
  bool TakeFrames();
  // Writes what FillWrite gives, inline, until nothing is left or the socket
  // is full (then waits for it, and WriteReady).
  void WriteRound();
  void WriteReady();
  // Every kPingEvery while open: a ping, and the peer's liveness checked.
  void Beat();
  void CloseNow(absl::Status why);
  bool closed() const { return state_ == State::kClosed; }

  std::shared_ptr<LinkTls> tls_;
  std::unique_ptr<Io> io_;
  State state_ = State::kConnecting;  // the channel's thread's alone
  // Wake() calls since the last write round was posted; 0 when none is due.
  std::atomic<uint32_t> wakes_{0};
  std::atomic<bool> writing_{false};
  std::atomic<int> fd_{-1};  // the socket while open, for Delivered()
};

// "host:port" or "[v6]:port" into its parts.
absl::StatusOr<std::pair<std::string, std::string>> SplitHostPort(absl::string_view address);

}  // namespace relay::common
