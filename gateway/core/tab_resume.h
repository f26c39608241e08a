#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "gateway/core/sealed_json.h"

namespace relay::gateway {

// What a tab's resume credential says: the account and role its ticket named,
// its place in the account's order of tabs, and until when it may come back
// without a new ticket (docs/protocols.md "Coming back without a ticket").
struct TabResume {
  std::string account;
  std::string role;
  uint64_t generation = 0;  // authsvc's, from the tab's first ticket: its place in the order
  // When that ticket was redeemed (the redeeming gateway's clock), kept by every credential
  // that descends from it: a sign-in that ended since refuses the whole chain
  // (SignedOutUsers), and a chain ends kChainLifetime after it, ticket again.
  absl::Time signed_in;
  absl::Time expires;
};

// The relay's resume credentials: "tr1.<payload>.<mac>" (SealedJson under a
// key of their own), so that a tab whose gateway went away comes back on any
// gateway without the host API. Visible ASCII only.
class TabResumeSigner {
 public:
  // How long a credential holds; a live tab gets a fresh one every half of it.
  static constexpr absl::Duration kLifetime = absl::Minutes(5);
  // How long a chain of credentials holds from its ticket: a tab open longer comes back
  // with a ticket, so that the host API decides again at least that often.
  static constexpr absl::Duration kChainLifetime = absl::Hours(12);

  explicit TabResumeSigner(absl::string_view secret);

  std::string Sign(const TabResume& resume) const;

  // The credential's claims, or InvalidArgument for anything forged,
  // malformed or of another kind, DeadlineExceeded when it or its chain has
  // expired at now.
  absl::StatusOr<TabResume> Verify(absl::string_view text, absl::Time now) const;

 private:
  SealedJson sealed_;
};

}  // namespace relay::gateway
