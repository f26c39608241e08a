#pragma once

#include "absl/strings/string_view.h"
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace relay::gateway {

// Rendezvous (highest random weight) hashing of accounts over router shard
// addresses. Every gateway with the same set of addresses picks the same shard
// for an account, whatever their order; adding a shard moves only the accounts
// that the new shard wins. The hash is fixed (not seeded per process), since
// every gateway must agree.
class ShardPicker {
 public:
  explicit ShardPicker(std::vector<std::string> addresses);

  // Index into the addresses given to the constructor.
  size_t Pick(absl::string_view account) const;

  const std::vector<std::string>& addresses() const { return addresses_; }

 private:
  std::vector<std::string> addresses_;
  std::vector<uint64_t> seeds_;
};

}  // namespace relay::gateway
