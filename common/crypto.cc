#include "common/crypto.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstdlib>

#include "absl/strings/string_view.h"

namespace relay::common {

std::string HexEncode(absl::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 0xf]);
  }
  return out;
}

namespace {

// OpenSSL 3 looks the legacy EVP_sha256() up in its provider tables on every
// use (a lock and a hash lookup: 0.67 against 0.20 µs a digest, 1.83 against
// 1.31 µs an HMAC, measured here); fetched once, the digest is shared by
// every thread (it is read-only).
const EVP_MD* Sha256() {
  static EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md;
}

}  // namespace

bool IsSha256Hex(absl::string_view text) {
  return text.size() == 64 && text.find_first_not_of("0123456789abcdef") == absl::string_view::npos;
}

std::string Sha256Hex(absl::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), digest, &len, Sha256(), nullptr);
  return HexEncode(absl::string_view(reinterpret_cast<char*>(digest), len));
}

std::string HmacSha256(absl::string_view key, absl::string_view data) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(Sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac, &len);
  return std::string(reinterpret_cast<char*>(mac), len);
}

void HmacSha256Key::CtxFree::operator()(EVP_MAC_CTX* ctx) const { EVP_MAC_CTX_free(ctx); }

HmacSha256Key::HmacSha256Key(absl::string_view key) {
  static EVP_MAC* const mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  keyed_.reset(EVP_MAC_CTX_new(mac));
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                         OSSL_PARAM_construct_end()};
  // An empty key is a valid HMAC key; OpenSSL wants a non-null pointer for it.
  static const unsigned char kEmpty = 0;
  const auto* bytes = key.empty() ? &kEmpty : reinterpret_cast<const unsigned char*>(key.data());
  if (keyed_ == nullptr || EVP_MAC_init(keyed_.get(), bytes, key.size(), params) != 1) {
    std::abort();  // only when OpenSSL itself is broken: nothing could be signed
  }
}

HmacSha256Key::~HmacSha256Key() = default;

std::string HmacSha256Key::Sign(absl::string_view data) const {
  Ctx ctx;
  {
    absl::MutexLock lock(&mu_);
    if (!idle_.empty()) {
      ctx = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  // A null key resets the context to its key's state (OpenSSL >= 3.0).
  if (ctx == nullptr) {
    ctx.reset(EVP_MAC_CTX_dup(keyed_.get()));
  } else if (EVP_MAC_init(ctx.get(), nullptr, 0, nullptr) != 1) {
    std::abort();
  }
  unsigned char mac[EVP_MAX_MD_SIZE];
  size_t len = 0;
  if (ctx == nullptr ||
      EVP_MAC_update(ctx.get(), reinterpret_cast<const unsigned char*>(data.data()), data.size()) != 1 ||
      EVP_MAC_final(ctx.get(), mac, &len, sizeof mac) != 1) {
    std::abort();
  }
  {
    // As many contexts as threads sign at once, rarely more than the I/O threads.
    constexpr size_t kMaxIdle = 16;
    absl::MutexLock lock(&mu_);
    if (idle_.size() < kMaxIdle) idle_.push_back(std::move(ctx));
  }
  return std::string(reinterpret_cast<char*>(mac), len);
}

bool SecureEquals(absl::string_view a, absl::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string RandomBytes(size_t n) {
  std::string out(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1) {
    std::abort();
  }
  return out;
}

}  // namespace relay::common
