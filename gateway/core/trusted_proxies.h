#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace relay::gateway {

// --trusted_proxies: the networks whose X-Real-IP / X-Forwarded-For headers
// are believed. The agent's address reaches the host API's brake, so a header
// from anyone else must not choose it. Plain C++; immutable after Parse.
class TrustedProxies {
 public:
  // "10.0.0.0/8,127.0.0.1,::1/128". Error names the bad entry.
  static absl::StatusOr<TrustedProxies> Parse(const std::vector<std::string>& cidrs);

  bool Contains(absl::string_view address) const;

  // The agent's address: the socket peer; or, when the peer is a trusted
  // proxy, X-Real-IP, else the right-most X-Forwarded-For entry that is not
  // itself a trusted proxy.
  std::string ClientAddress(absl::string_view peer, std::optional<absl::string_view> real_ip,
                            std::optional<absl::string_view> forwarded_for) const;

 private:
  struct Network {
    std::array<uint8_t, 16> bytes{};  // IPv4 as IPv4-mapped IPv6
    int prefix = 0;                   // in bits of the 128
  };
  static std::optional<std::array<uint8_t, 16>> ParseAddress(absl::string_view text);

  std::vector<Network> networks_;
};

}  // namespace relay::gateway
