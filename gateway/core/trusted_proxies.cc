#include "gateway/core/trusted_proxies.h"

#include <arpa/inet.h>

#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace relay::gateway {

std::optional<std::array<uint8_t, 16>> TrustedProxies::ParseAddress(absl::string_view text) {
  std::string s(absl::StripAsciiWhitespace(text));
  if (s.size() >= 2 && s.front() == '[' && s.back() == ']') {
    s = s.substr(1, s.size() - 2);
  }
  std::array<uint8_t, 16> out{};
  in_addr v4;
  if (inet_pton(AF_INET, s.c_str(), &v4) == 1) {
    out[10] = 0xff;
    out[11] = 0xff;
    std::memcpy(out.data() + 12, &v4, 4);
    return out;
  }
  in6_addr v6;
  if (inet_pton(AF_INET6, s.c_str(), &v6) == 1) {
    std::memcpy(out.data(), &v6, 16);
    return out;
  }
  return std::nullopt;
}

absl::StatusOr<TrustedProxies> TrustedProxies::Parse(const std::vector<std::string>& cidrs) {
  TrustedProxies proxies;
  for (const std::string& cidr : cidrs) {
    std::vector<std::string> parts = absl::StrSplit(cidr, '/');
    auto address = ParseAddress(parts[0]);
    bool v4 = parts[0].find(':') == std::string::npos;
    int prefix = v4 ? 32 : 128;
    if (!address || parts.size() > 2 ||
        (parts.size() == 2 && (!absl::SimpleAtoi(parts[1], &prefix) || prefix < 0 ||
                               prefix > (v4 ? 32 : 128)))) {
      return absl::InvalidArgumentError(absl::StrCat("bad --trusted_proxies entry '", cidr, "'"));
    }
    proxies.networks_.push_back(Network{*address, v4 ? prefix + 96 : prefix});
  }
  return proxies;
}

bool TrustedProxies::Contains(absl::string_view address) const {
  auto bytes = ParseAddress(address);
  if (!bytes) {
    return false;
  }
  for (const Network& network : networks_) {
    int bits = network.prefix;
    bool match = true;
    for (int i = 0; i < 16 && bits > 0 && match; ++i, bits -= 8) {
      uint8_t mask = bits >= 8 ? 0xff : static_cast<uint8_t>(0xff << (8 - bits));
      match = ((*bytes)[i] & mask) == (network.bytes[i] & mask);
    }
    if (match) {
      return true;
    }
  }
  return false;
}

std::string TrustedProxies::ClientAddress(absl::string_view peer,
                                          std::optional<absl::string_view> real_ip,
                                          std::optional<absl::string_view> forwarded_for) const {
  if (!Contains(peer)) {
    return std::string(peer);
  }
  if (real_ip && ParseAddress(*real_ip)) {
    return std::string(absl::StripAsciiWhitespace(*real_ip));
  }
  if (forwarded_for) {
    std::vector<absl::string_view> hops = absl::StrSplit(*forwarded_for, ',');
    for (auto it = hops.rbegin(); it != hops.rend(); ++it) {
      absl::string_view hop = absl::StripAsciiWhitespace(*it);
      if (!ParseAddress(hop)) {
        break;  // garbage: stop believing the chain here
      }
      if (!Contains(hop)) {
        return std::string(hop);
      }
    }
  }
  return std::string(peer);
}

}  // namespace relay::gateway
