#include "absl/strings/string_view.h"
#include "gateway/core/shard_picker.h"

namespace relay::gateway {
namespace {

// FNV-1a, then a 64-bit finalizer (splitmix64) so that similar inputs score
// independently. Not cryptographic, and need not be: it only spreads load.
uint64_t Fnv1a(absl::string_view data, uint64_t hash = 14695981039346656037ull) {
  for (unsigned char c : data) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

ShardPicker::ShardPicker(std::vector<std::string> addresses) : addresses_(std::move(addresses)) {
  for (const std::string& address : addresses_) {
    seeds_.push_back(Fnv1a(address));
  }
}

size_t ShardPicker::Pick(absl::string_view account) const {
  size_t best = 0;
  uint64_t best_score = 0;
  for (size_t i = 0; i < seeds_.size(); ++i) {
    uint64_t score = Mix(Fnv1a(account, seeds_[i]));
    if (i == 0 || score > best_score) {
      best = i;
      best_score = score;
    }
  }
  return best;
}

}  // namespace relay::gateway
