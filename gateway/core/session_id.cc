#include "absl/strings/string_view.h"
#include "gateway/core/session_id.h"

#include <atomic>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/crypto.h"

namespace relay::gateway {
namespace {

constexpr absl::string_view kVersion = "v1";
constexpr size_t kMaxIdLength = 1024;

std::atomic<uint64_t> next_instance{1};

// The last id a thread verified, by which signer, and its account.
struct LastVerified {
  uint64_t signer = 0;
  std::string id;
  std::string account;
};

}  // namespace

SessionIdSigner::SessionIdSigner(std::string secret)
    : secret_(std::move(secret)), key_(secret_), instance_(next_instance.fetch_add(1)) {}

std::string SessionIdSigner::Mac(absl::string_view signed_part) const {
  return absl::WebSafeBase64Escape(key_.Sign(signed_part));
}

std::string SessionIdSigner::Issue(absl::string_view account) const {
  std::string signed_part =
      absl::StrCat(kVersion, ".", absl::WebSafeBase64Escape(account), ".",
                   absl::WebSafeBase64Escape(common::RandomBytes(12)));
  return absl::StrCat(signed_part, ".", Mac(signed_part));
}

absl::StatusOr<std::string> SessionIdSigner::Verify(absl::string_view id) const {
  thread_local LastVerified last;
  if (last.signer == instance_ && common::SecureEquals(id, last.id)) {
    return last.account;
  }
  auto not_found = [] { return absl::NotFoundError("unknown session"); };
  if (id.size() > kMaxIdLength || !absl::StartsWith(id, absl::StrCat(kVersion, "."))) {
    return not_found();
  }
  size_t last_dot = id.rfind('.');
  absl::string_view signed_part = id.substr(0, last_dot);
  absl::string_view mac = id.substr(last_dot + 1);
  std::vector<absl::string_view> parts = absl::StrSplit(signed_part, '.');
  if (parts.size() != 3 || !common::SecureEquals(Mac(signed_part), mac)) {
    return not_found();
  }
  std::string account;
  if (!absl::WebSafeBase64Unescape(parts[1], &account) || account.empty()) {
    return not_found();
  }
  last.signer = instance_;
  last.id.assign(id.data(), id.size());
  last.account = account;
  return account;
}

}  // namespace relay::gateway
