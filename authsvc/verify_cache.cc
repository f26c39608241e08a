#include "authsvc/verify_cache.h"

#include <optional>

#include "absl/strings/str_cat.h"

namespace relay::authsvc {

void VerifyCache::Verify(const std::string& token_sha256, const std::string& address,
                         const Fetch& fetch, Done done) {
  std::optional<HostAnswer> cached;
  std::string join;
  std::shared_ptr<Pending> started;  // set when this caller starts the upstream request
  {
    absl::MutexLock lock(&mu_);
    auto it = index_.find(token_sha256);
    absl::Time now = clock_();
    if (it != index_.end() && now < it->second->expires) {
      lru_.splice(lru_.begin(), lru_, it->second);
      cached = it->second->answer;
      cached->keep = it->second->expires - now;
      ++(cached->kind == HostAnswer::Kind::kOk ? stats_.hits : stats_.negative_hits);
    } else {
      if (it != index_.end()) {
        EraseLocked(it->second);
      }
      join = absl::StrCat(token_sha256, "\n", address);
      std::shared_ptr<Pending>& pending = pending_[join];
      // A request started before a Forget is left to the callers that were
      // waiting then; a caller after it asks anew.
      if (pending == nullptr || pending->forget_epoch != forget_epoch_) {
        pending = std::make_shared<Pending>();
        pending->forget_epoch = forget_epoch_;
        started = pending;
      }
      pending->waiters.push_back(std::move(done));
      ++(started ? stats_.misses : stats_.coalesced);
    }
  }
  if (cached) {
    done(*cached);
  } else if (started) {
    fetch([this, key = token_sha256, join = std::move(join),
           started = std::move(started)](const Result& result) {
      Complete(key, join, started, result);
    });
  }
}

void VerifyCache::Complete(const std::string& key, const std::string& join,
                           const std::shared_ptr<Pending>& pending, const Result& upstream) {
  Result result = upstream;
  std::vector<Done> waiters;
  {
    absl::MutexLock lock(&mu_);
    waiters = std::move(pending->waiters);
    bool forgotten = pending->forget_epoch != forget_epoch_;
    // Unless a request after a Forget took its place.
    if (auto it = pending_.find(join); it != pending_.end() && it->second == pending) {
      pending_.erase(it);
    }
    absl::Duration ttl = absl::ZeroDuration();
    if (result.ok() && result->kind == HostAnswer::Kind::kOk) {
      ttl = options_.ttl;
    } else if (result.ok() && result->kind == HostAnswer::Kind::kInvalid) {
      ttl = options_.negative_ttl;
    }
    if (!forgotten && ttl > absl::ZeroDuration() && options_.capacity > 0) {
      result->keep = ttl;
      lru_.push_front(Entry{key, *result, clock_() + ttl});
      index_[key] = lru_.begin();
      while (lru_.size() > options_.capacity) {
        EraseLocked(std::prev(lru_.end()));
      }
    }
  }
  for (Done& done : waiters) {
    done(result);
  }
}

void VerifyCache::EraseLocked(std::list<Entry>::iterator it) {
  index_.erase(it->key);
  lru_.erase(it);
}

size_t VerifyCache::ForgetUser(const std::string& user) {
  absl::MutexLock lock(&mu_);
  ++forget_epoch_;
  size_t dropped = 0;
  for (auto it = lru_.begin(); it != lru_.end();) {
    auto next = std::next(it);
    if (it->answer.user == user) {
      EraseLocked(it);
      ++dropped;
    }
    it = next;
  }
  return dropped;
}

size_t VerifyCache::ForgetToken(const std::string& token_sha256) {
  absl::MutexLock lock(&mu_);
  ++forget_epoch_;
  auto it = index_.find(token_sha256);
  if (it == index_.end()) {
    return 0;
  }
  EraseLocked(it->second);
  return 1;
}

VerifyCache::Stats VerifyCache::stats() const {
  absl::MutexLock lock(&mu_);
  Stats stats = stats_;
  stats.entries = lru_.size();
  return stats;
}

size_t VerifyCache::size() const {
  absl::MutexLock lock(&mu_);
  return lru_.size();
}

}  // namespace relay::authsvc
