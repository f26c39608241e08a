#pragma once

#include <openssl/types.h>

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace relay::common {

// What one step on a link's socket came to.
enum class LinkIo {
  kDone,       // made headway (bytes says how much for a read or a write)
  kWantRead,   // try again once the socket is readable
  kWantWrite,  // try again once the socket is writable
  kClosed,     // the peer closed the connection (or reset it)
  kError,      // anything else; error says what
};

struct LinkStep {
  LinkIo io = LinkIo::kDone;
  size_t bytes = 0;
  std::string error;  // kError only: for a log line (no secret is in it)
};

// The byte stream under one link: a connected non-blocking socket, plain or
// under TLS with OpenSSL straight on the descriptor (no memory BIOs, no
// composed operations). Each step goes as far as the socket lets it and says
// what it waits for; the caller waits for that (with Asio) and steps again.
// (Through asio::ssl::stream each record cost two handler hops and a read that
// found nothing; the links spent more on that than on everything else they do.)
//
// What went wrong is read at the step that failed (errno, OpenSSL's error
// queue) and returned with it, never left for later. Not thread-safe; does not
// own the descriptor. Plain C++ and OpenSSL: no Asio.
class LinkSocket {
 public:
  LinkSocket() = default;
  ~LinkSocket();
  LinkSocket(const LinkSocket&) = delete;
  LinkSocket& operator=(const LinkSocket&) = delete;

  // The connected, non-blocking descriptor to step on.
  void Attach(int fd) { fd_ = fd; }
  // Begins TLS: as the server, or as a client that checks the server's
  // certificate names host (a DNS name, or an IP address). An error when host
  // cannot be checked: never fail open.
  absl::Status StartTls(SSL_CTX* context, bool server, const std::string& host);
  // kDone once the TLS handshake is done (at once over plaintext).
  LinkStep Handshake();
  LinkStep Read(absl::Span<char> into);
  // After a Read that made headway: the socket had no more bytes at the last
  // recv, and TLS holds none read ahead. A wait for readability from then on
  // misses nothing, so the read that would find the socket empty can be
  // skipped: Asio re-arms the descriptor (EPOLL_CTL_MOD) on each wait, and
  // the kernel then reports what arrived since.
  bool drained() const { return drained_; }
  LinkStep Write(absl::string_view data);
  // The common name of the peer's certificate (its role) once the handshake is
  // done; empty over plaintext.
  const std::string& peer_role() const { return peer_role_; }
  bool tls() const { return ssl_ != nullptr; }
  // The descriptor is about to be closed: the TLS state goes with it (its
  // number may soon be another socket's), and every step from now is kClosed.
  void Release();

 private:
  // A failed SSL_* call's result, with errno as it left it.
  LinkStep FromSsl(int result, int saved_errno);
  // OpenSSL's callback on the socket BIO's reads: notes whether the last recv
  // took less than it asked for (the socket had no more).
  static long OnBioRead(BIO* bio, int oper, const char* argp, size_t len, int argi, long argl,
                        int ret, size_t* processed);

  int fd_ = -1;
  SSL* ssl_ = nullptr;
  std::string peer_role_;
  bool recv_short_ = false;  // the socket BIO's last recv (TLS)
  bool drained_ = false;     // see drained()
};

}  // namespace relay::common
