#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/grpc_tls.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace relay::common {

// The TLS of one side of the links (ARCHITECTURE.md, "Between the services"):
// the same CA, certificate and key as the process's gRPC; a server requires a
// client certificate the CA signed, a client checks the server's certificate
// against the host it dialled.
class LinkTls {
 public:
  enum class Side { kServer, kClient };
  // Null when tls is not enabled (the links are plaintext, as gRPC is).
  static absl::StatusOr<std::shared_ptr<LinkTls>> Make(const GrpcTls& tls, Side side);
  ~LinkTls();

  struct Context;  // boost::asio::ssl::context, kept out of this header
  Context& context() { return *context_; }

 private:
  explicit LinkTls(std::unique_ptr<Context> context);
  std::unique_ptr<Context> context_;
};

// One end of a link between a gateway and a router shard: a TCP connection
// (under TLS when configured) carrying length-prefixed frames both ways
// (common/link_frame.h). It runs on one io_context: the hooks below run on its
// thread, one at a time. Writes are batched: Wake() asks for a write round,
// which takes everything FillWrite() has ready into one write; while a write
// is in flight, what becomes ready waits for the next round. Subclasses are
// the router's side of a gateway's link and the gateway's side of a shard's.
//
// Owned by shared_ptr: every pending operation holds one, so a channel lives
// until it is closed and its last handler has run.
class LinkChannel : public std::enable_shared_from_this<LinkChannel> {
 public:
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
  // Asked on the channel's thread before each read: true stops reading (the
  // peer's bytes wait in the kernel, then in the peer) until ResumeReading.
  // The link's liveness keeps watching the peer taking our bytes meanwhile.
  virtual bool ReadPaused() { return false; }
  // Whether a peer that takes none of our bytes for the liveness bound while
  // some wait is hung. The router's side: a gateway must read its link. Not
  // the gateway's: a router that pauses reading (it is backed up) still
  // pings, and its silence is what shows it hung.
  virtual bool EndsOnWriteStall() const { return true; }
  // Once, when the channel has closed (by either side, or by Close).
  virtual void OnClosed(const absl::Status& status) = 0;

  // The common name of the peer's certificate (its role); empty over plaintext.
  const std::string& peer_role() const { return peer_role_; }
  // The peer's address, for logs.
  std::string peer() const;
  bool tls() const { return tls_ != nullptr; }

 private:
  friend class LinkListener;
  struct Io;

  // On the channel's thread.
  void Adopt();  // server side: the socket is accepted
  void Handshake(bool server);
  void ContinueHandshake();
  // Once the socket is readable (or writable), next; unless closed meanwhile.
  void WaitThen(bool readable, const char* doing, void (LinkChannel::*next)());
  void Opened();
  // Waits until the socket is readable, then ReadReady.
  void ReadMore();
  // Reads until the socket has no more, handing out whole frames.
  void ReadReady();
  // Writes what FillWrite gives, inline, until nothing is left or the socket
  // is full (then waits for it, and WriteReady).
  void WriteRound();
  void WriteReady();
  // Every kPingEvery while open: a ping, and the peer's liveness checked.
  void Beat();
  void CloseNow(absl::Status why);

  std::shared_ptr<LinkTls> tls_;
  std::unique_ptr<Io> io_;
  std::string peer_role_;
  bool open_ = false;
  bool framed_ = false;  // the peer's first frame came: the open deadline is met
  bool closed_ = false;
  std::atomic<bool> wake_posted_{false};
  std::atomic<bool> writing_{false};
  std::atomic<int> fd_{-1};  // the socket while open, for Delivered()
};

// Accepts links on one address, on a thread of its own, and hands each to a
// channel from make() once its TLS handshake is done. A client that does not
// finish its handshake within 10 s is dropped; beyond 64 handshakes under way
// the oldest is dropped; beyond 1,024 links open a new connection is closed at
// once.
class LinkListener {
 public:
  using Factory = std::function<std::shared_ptr<LinkChannel>(boost::asio::io_context& io)>;

  // address: host:port (port 0: any). tls: null for plaintext.
  static absl::StatusOr<std::unique_ptr<LinkListener>> Start(const std::string& address,
                                                             std::shared_ptr<LinkTls> tls,
                                                             Factory make);
  ~LinkListener();
  LinkListener(const LinkListener&) = delete;
  LinkListener& operator=(const LinkListener&) = delete;

  int port() const { return port_; }
  // The io_context of every accepted channel.
  boost::asio::io_context& io();
  // Closes every link (their OnClosed runs), stops accepting, and stops the
  // thread.
  void Stop();

 private:
  struct State;
  explicit LinkListener(std::unique_ptr<State> state);
  void Accept();

  std::unique_ptr<State> state_;
  int port_ = 0;
};

// "host:port" or "[v6]:port" into its parts.
absl::StatusOr<std::pair<std::string, std::string>> SplitHostPort(absl::string_view address);

}  // namespace relay::common
