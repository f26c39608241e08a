#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

typedef struct evp_mac_ctx_st EVP_MAC_CTX;

namespace relay::common {

// Lowercase hex SHA-256 of data (OpenSSL).
std::string Sha256Hex(absl::string_view data);
// text is what Sha256Hex writes: 64 lowercase hex digits.
bool IsSha256Hex(absl::string_view text);

// Raw 32-byte HMAC-SHA256 of data under key (OpenSSL).
std::string HmacSha256(absl::string_view key, absl::string_view data);

// HMAC-SHA256 under one key that signs many messages (session ids on every
// request). OpenSSL 3's one-shot HMAC() looks the algorithm up and hashes the
// key's pads on every call (2.5 µs here); a keyed context reset for each
// message costs 0.27 µs. Contexts are not shared between threads at once:
// Sign takes an idle one from a small pool (or copies the keyed one) and
// gives it back. Safe to call from any thread.
class HmacSha256Key {
 public:
  explicit HmacSha256Key(absl::string_view key);
  ~HmacSha256Key();
  HmacSha256Key(const HmacSha256Key&) = delete;
  HmacSha256Key& operator=(const HmacSha256Key&) = delete;

  // The raw 32-byte MAC of data; the same bytes as HmacSha256(key, data).
  std::string Sign(absl::string_view data) const;

 private:
  struct CtxFree {
    void operator()(EVP_MAC_CTX* ctx) const;
  };
  using Ctx = std::unique_ptr<EVP_MAC_CTX, CtxFree>;

  Ctx keyed_;  // never used to sign: only copied
  mutable absl::Mutex mu_;
  mutable std::vector<Ctx> idle_ ABSL_GUARDED_BY(mu_);
};

// Constant-time comparison of equal-length secrets.
bool SecureEquals(absl::string_view a, absl::string_view b);

// n bytes from the OS's CSPRNG (OpenSSL RAND_bytes). Aborts if it fails:
// ids made from a failed RNG would be guessable.
std::string RandomBytes(size_t n);

// Lowercase hex of arbitrary bytes.
std::string HexEncode(absl::string_view bytes);

}  // namespace relay::common
