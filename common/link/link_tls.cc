#include "common/link/link_tls.h"

#include <utility>

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/ssl/context.hpp>

#include "absl/strings/str_cat.h"

namespace relay::common {

namespace ssl = boost::asio::ssl;

absl::StatusOr<std::shared_ptr<LinkTls>> LinkTls::Make(const ServiceTls& tls, Side side) {
  if (!tls.enabled()) {
    return nullptr;
  }
  const bool server = side == Side::kServer;
  // Asio's context reads the PEM chain, key and CA; the SSL_CTX is kept and
  // the wrapper let go.
  ssl::context ctx(server ? ssl::context::tls_server : ssl::context::tls_client);
  boost::system::error_code ec;
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                      ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1,
                  ec);
  if (!ec) ctx.use_certificate_chain(boost::asio::buffer(tls.cert_pem), ec);
  if (!ec) ctx.use_private_key(boost::asio::buffer(tls.key_pem), ssl::context::pem, ec);
  if (!ec) ctx.add_certificate_authority(boost::asio::buffer(tls.ca_pem), ec);
  if (!ec) {
    ctx.set_verify_mode(ssl::verify_peer | (server ? ssl::verify_fail_if_no_peer_cert : 0), ec);
  }
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("the links' TLS cannot use --grpc_tls_ca, --grpc_tls_cert, --grpc_tls_key: ",
                     ec.message()));
  }
  SSL_CTX* native = ctx.native_handle();
  // A server admits client certificates only, a client server certificates
  // only (make-certs.sh gives each its extended key usage).
  SSL_CTX_set_purpose(native, server ? X509_PURPOSE_SSL_CLIENT : X509_PURPOSE_SSL_SERVER);
  // One recv takes every record there is, not a header and then a body each.
  SSL_CTX_set_read_ahead(native, 1);
  // Both ends are ours: TLS 1.3 only (no renegotiation to reckon with). A peer
  // that closes without close_notify (ours never send one) has closed.
  SSL_CTX_set_min_proto_version(native, TLS1_3_VERSION);
  SSL_CTX_set_options(native, SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_up_ref(native);  // ours now; ctx frees its own reference
  return std::shared_ptr<LinkTls>(new LinkTls(native, side));
}

LinkTls::~LinkTls() { SSL_CTX_free(context_); }

}  // namespace relay::common
