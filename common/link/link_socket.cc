#include "common/link/link_socket.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "absl/strings/str_cat.h"

namespace relay::common {

namespace {

std::string CommonName(SSL* ssl) {
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (cert == nullptr) {
    return "";
  }
  std::string name;
  X509_NAME* subject = X509_get_subject_name(cert);
  int index = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  if (index >= 0) {
    unsigned char* utf8 = nullptr;
    int length = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, index)));
    if (length > 0) {
      name.assign(reinterpret_cast<char*>(utf8), static_cast<size_t>(length));
    }
    OPENSSL_free(utf8);
  }
  X509_free(cert);
  return name;
}

bool IsIpAddress(const std::string& host) {
  unsigned char address[16];
  return inet_pton(AF_INET, host.c_str(), address) == 1 || inet_pton(AF_INET6, host.c_str(), address) == 1;
}

// A plain send or recv's result, errno as it left it.
LinkStep FromPlain(ssize_t result, int saved_errno, bool writing) {
  if (result > 0) {
    return {LinkIo::kDone, static_cast<size_t>(result), {}};
  }
  if (result == 0) {
    return {LinkIo::kClosed, 0, {}};
  }
  if (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK) {
    return {writing ? LinkIo::kWantWrite : LinkIo::kWantRead, 0, {}};
  }
  if (saved_errno == ECONNRESET || saved_errno == EPIPE) {
    return {LinkIo::kClosed, 0, {}};
  }
  return {LinkIo::kError, 0, std::strerror(saved_errno)};
}

}  // namespace

LinkSocket::~LinkSocket() { Release(); }

void LinkSocket::Release() {
  if (ssl_ != nullptr) {
    SSL_free(ssl_);
    ssl_ = nullptr;
  }
  fd_ = -1;
}

absl::Status LinkSocket::StartTls(SSL_CTX* context, bool server, const std::string& host) {
  ssl_ = SSL_new(context);
  if (ssl_ == nullptr || SSL_set_fd(ssl_, fd_) != 1) {
    return absl::InternalError("the link's TLS could not start");
  }
  SSL_set_mode(ssl_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  BIO* socket_bio = SSL_get_rbio(ssl_);
  BIO_set_callback_arg(socket_bio, reinterpret_cast<char*>(this));
  BIO_set_callback_ex(socket_bio, &LinkSocket::OnBioRead);
  if (server) {
    SSL_set_accept_state(ssl_);
    return absl::OkStatus();
  }
  SSL_set_connect_state(ssl_);
  // The server's certificate must name the host dialled: a name (and say
  // which, SNI), or an address.
  const bool named = IsIpAddress(host)
                         ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), host.c_str()) == 1
                         : SSL_set_tlsext_host_name(ssl_, host.c_str()) == 1 &&
                               SSL_set1_host(ssl_, host.c_str()) == 1;
  if (!named) {
    // Without the host to check, any server certificate would pass.
    return absl::InvalidArgumentError(
        absl::StrCat("the router's host \"", host, "\" cannot be checked against its certificate"));
  }
  return absl::OkStatus();
}

long LinkSocket::OnBioRead(BIO* bio, int oper, const char* argp, size_t len, int argi, long argl,
                           int ret, size_t* processed) {
  if (oper == (BIO_CB_READ | BIO_CB_RETURN)) {
    auto* socket = reinterpret_cast<LinkSocket*>(BIO_get_callback_arg(bio));
    // A failed read (EAGAIN, the end) leaves the socket empty too.
    socket->recv_short_ = ret <= 0 || processed == nullptr || *processed < len;
  }
  return (oper & BIO_CB_RETURN) != 0 ? ret : 1;  // before a call: go on
}

LinkStep LinkSocket::FromSsl(int result, int saved_errno) {
  switch (SSL_get_error(ssl_, result)) {
    case SSL_ERROR_WANT_READ:
      return {LinkIo::kWantRead, 0, {}};
    case SSL_ERROR_WANT_WRITE:
      return {LinkIo::kWantWrite, 0, {}};
    case SSL_ERROR_ZERO_RETURN:
      return {LinkIo::kClosed, 0, {}};
    case SSL_ERROR_SYSCALL:
      // Ours never send close_notify (SSL_OP_IGNORE_UNEXPECTED_EOF): an end
      // of the stream, or a reset, is the peer closing.
      if (ERR_peek_error() == 0 &&
          (saved_errno == 0 || saved_errno == ECONNRESET || saved_errno == EPIPE)) {
        return {LinkIo::kClosed, 0, {}};
      }
      break;
    default:
      break;
  }
  std::string said;
  if (long verify = SSL_get_verify_result(ssl_); verify != X509_V_OK) {
    said = absl::StrCat("certificate: ", X509_verify_cert_error_string(verify));
  } else if (unsigned long code = ERR_get_error(); code != 0) {
    char text[256];
    ERR_error_string_n(code, text, sizeof(text));
    said = text;
  } else {
    said = saved_errno != 0 ? std::string(std::strerror(saved_errno)) : "the peer closed the connection";
  }
  ERR_clear_error();
  return {LinkIo::kError, 0, std::move(said)};
}

LinkStep LinkSocket::Handshake() {
  if (ssl_ == nullptr) {
    return {fd_ < 0 ? LinkIo::kClosed : LinkIo::kDone, 0, {}};
  }
  ERR_clear_error();
  errno = 0;
  int result = SSL_do_handshake(ssl_);
  if (result == 1) {
    peer_role_ = CommonName(ssl_);
    return {LinkIo::kDone, 0, {}};
  }
  return FromSsl(result, errno);
}

LinkStep LinkSocket::Read(absl::Span<char> into) {
  if (fd_ < 0) {
    return {LinkIo::kClosed, 0, {}};
  }
  errno = 0;
  drained_ = false;
  if (ssl_ == nullptr) {
    ssize_t result = ::recv(fd_, into.data(), into.size(), 0);
    drained_ = result > 0 && static_cast<size_t>(result) < into.size();
    return FromPlain(result, errno, /*writing=*/false);
  }
  ERR_clear_error();
  int result = SSL_read(ssl_, into.data(), static_cast<int>(std::min<size_t>(into.size(), 1 << 30)));
  if (result > 0) {
    // A record served from what OpenSSL read ahead made no recv: the last one
    // still tells, since nothing was taken from the socket after it.
    drained_ = recv_short_ && SSL_has_pending(ssl_) == 0;
    return {LinkIo::kDone, static_cast<size_t>(result), {}};
  }
  return FromSsl(result, errno);
}

LinkStep LinkSocket::Write(absl::string_view data) {
  if (fd_ < 0) {
    return {LinkIo::kClosed, 0, {}};
  }
  errno = 0;
  if (ssl_ == nullptr) {
    ssize_t result = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    return FromPlain(result, errno, /*writing=*/true);
  }
  ERR_clear_error();
  int result = SSL_write(ssl_, data.data(), static_cast<int>(std::min<size_t>(data.size(), 1 << 30)));
  if (result > 0) {
    return {LinkIo::kDone, static_cast<size_t>(result), {}};
  }
  return FromSsl(result, errno);
}

}  // namespace relay::common
