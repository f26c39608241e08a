#include "router/core/session_table.h"

#include "absl/strings/match.h"

#include <algorithm>
#include <array>
#include <tuple>

namespace relay::router {
namespace {

constexpr size_t kMaxEnded = 100000;

}  // namespace

int LogLevelRank(const std::string& name) {
  static constexpr std::array<const char*, 8> kLevels = {
      "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"};
  for (size_t i = 0; i < kLevels.size(); ++i) {
    if (name == kLevels[i]) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

bool SessionTable::Counts(const Session& s, absl::Time now) const {
  return s.stream.has_value() || now - s.last_seen < options_.active_window;
}

uint32_t SessionTable::CountLocked(const std::string& account, absl::Time now) const {
  auto it = by_account_.find(account);
  if (it == by_account_.end()) {
    return 0;
  }
  // A 2026-07-28 agent has a session per token ("t.<key>") and one per
  // listen stream ("l.<key>.<gateway>.<n>"): it counts once.
  absl::flat_hash_set<absl::string_view> agents;
  for (const std::string& id : it->second) {
    if (Counts(sessions_.at(id), now)) {
      agents.insert(AgentOf(id));
    }
  }
  return static_cast<uint32_t>(agents.size());
}

absl::string_view SessionTable::AgentOf(absl::string_view session) {
  if (absl::StartsWith(session, "l.")) {
    absl::string_view key = session.substr(2);
    return key.substr(0, key.find('.'));
  }
  if (absl::StartsWith(session, "t.")) {
    return session.substr(2);
  }
  return session;
}

void SessionTable::EraseLocked(const std::string& session) {
  auto it = sessions_.find(session);
  if (it == sessions_.end()) {
    return;
  }
  auto ids = by_account_.find(it->second.account);
  if (ids != by_account_.end()) {
    ids->second.erase(session);
    if (ids->second.empty()) {
      by_account_.erase(ids);
    }
  }
  sessions_.erase(it);
}

SessionTable::Session& SessionTable::Upsert(const std::string& session, const std::string& account,
                                            absl::Time now) {
  if (!sessions_.contains(session)) {
    auto ids = by_account_.find(account);
    if (ids != by_account_.end() && ids->second.size() >= options_.max_sessions_per_account) {
      ForgetOldest(account);
    }
  }
  auto [it, inserted] = sessions_.try_emplace(session);
  if (inserted) {
    it->second.account = account;
    by_account_[account].insert(session);
  }
  it->second.last_seen = now;
  return it->second;
}

void SessionTable::ForgetOldest(const std::string& account) {
  auto ids = by_account_.find(account);
  const std::string* oldest = nullptr;
  for (const std::string& id : ids->second) {
    const Session& s = sessions_.at(id);
    if (oldest == nullptr) {
      oldest = &id;
      continue;
    }
    const Session& o = sessions_.at(*oldest);
    // Records with a stream go last: their stream would lose its events.
    if (std::make_tuple(s.stream.has_value(), s.last_seen) <
        std::make_tuple(o.stream.has_value(), o.last_seen)) {
      oldest = &id;
    }
  }
  std::string victim = *oldest;
  ids->second.erase(victim);
  sessions_.erase(victim);
}

void SessionTable::ReportChange(const std::string& account, absl::Time now,
                                std::vector<std::string>& out) {
  uint32_t count = CountLocked(account, now);
  auto [it, fresh] = last_count_.try_emplace(account);
  if (fresh || it->second != count) {
    it->second = count;
    out.push_back(account);
  }
}

std::vector<std::string> SessionTable::Touch(const std::string& session,
                                             const std::string& account, absl::Time now) {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> changed;
  if (ended_.contains(session)) {
    return changed;
  }
  Upsert(session, account, now);
  ReportChange(account, now, changed);
  return changed;
}

std::vector<std::string> SessionTable::End(const std::string& session) {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> changed;
  if (ended_.insert(session).second) {
    ended_order_.push_back(session);
    if (ended_order_.size() > kMaxEnded) {
      ended_.erase(ended_order_.front());
      ended_order_.pop_front();
    }
  }
  auto it = sessions_.find(session);
  if (it == sessions_.end()) {
    return changed;
  }
  std::string account = it->second.account;
  by_account_[account].erase(session);
  if (by_account_[account].empty()) {
    by_account_.erase(account);
  }
  sessions_.erase(it);
  ReportChange(account, last_now_, changed);
  return changed;
}

std::vector<StreamDelivery> SessionTable::OpenStream(const std::string& session,
                                                     const std::string& account, StreamRef stream,
                                                     uint64_t last_event_id, absl::Time now,
                                                     std::vector<std::string>* changed) {
  absl::MutexLock lock(&mu_);
  last_now_ = now;
  std::vector<StreamDelivery> replay;
  if (ended_.contains(session)) {
    return replay;
  }
  Session& s = Upsert(session, account, now);
  s.stream = stream;
  if (last_event_id > 0) {
    for (const auto& [id, message] : s.replay) {
      if (id > last_event_id) {
        replay.push_back(StreamDelivery{stream, id, message, session});
      }
    }
  }
  ReportChange(account, now, *changed);
  return replay;
}

std::vector<std::string> SessionTable::CloseStream(const std::string& session, StreamRef stream,
                                                   absl::Time now) {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> changed;
  auto it = sessions_.find(session);
  if (it == sessions_.end() || it->second.stream != stream) {
    return changed;
  }
  it->second.stream.reset();
  it->second.last_seen = now;
  const std::string account = it->second.account;
  if (IsListen(session)) {
    EraseLocked(session);  // a listen stream's session lives as long as the stream
  }
  ReportChange(account, now, changed);
  return changed;
}

std::vector<std::string> SessionTable::CloseLink(uint64_t link_id, absl::Time now) {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> changed;
  std::vector<std::string> listens;
  std::vector<std::string> accounts;
  for (auto& [id, s] : sessions_) {
    if (s.stream && s.stream->link_id == link_id) {
      s.stream.reset();
      s.last_seen = now;
      accounts.push_back(s.account);
      if (IsListen(id)) {
        listens.push_back(id);
      }
    }
  }
  for (const std::string& id : listens) {
    EraseLocked(id);
  }
  for (const std::string& account : accounts) {
    ReportChange(account, now, changed);
  }
  return changed;
}

std::vector<std::string> SessionTable::Sweep(absl::Time now) {
  absl::MutexLock lock(&mu_);
  last_now_ = now;
  std::vector<std::string> changed;
  std::vector<std::string> forget;
  for (auto& [id, s] : sessions_) {
    if (!s.stream && now - s.last_seen > options_.forget_after) {
      forget.push_back(id);
    }
  }
  for (const std::string& id : forget) {
    const std::string account = sessions_[id].account;
    by_account_[account].erase(id);
    if (by_account_[account].empty()) {
      by_account_.erase(account);
    }
    sessions_.erase(id);
  }
  for (auto it = last_count_.begin(); it != last_count_.end();) {
    uint32_t count = CountLocked(it->first, now);
    if (count != it->second) {
      it->second = count;
      changed.push_back(it->first);
    }
    if (count == 0 && !by_account_.contains(it->first)) {
      last_count_.erase(it++);
    } else {
      ++it;
    }
  }
  return changed;
}

uint32_t SessionTable::AgentCount(const std::string& account, absl::Time now) const {
  absl::MutexLock lock(&mu_);
  return CountLocked(account, now);
}

bool SessionTable::Contains(const std::string& session) const {
  absl::MutexLock lock(&mu_);
  return sessions_.contains(session);
}

std::string SessionTable::AccountOf(const std::string& session) const {
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(session);
  return it == sessions_.end() ? std::string() : it->second.account;
}

bool SessionTable::IsEnded(const std::string& session) const {
  absl::MutexLock lock(&mu_);
  return ended_.contains(session);
}

void SessionTable::Subscribe(const std::string& session, const std::string& account,
                             const std::string& uri, bool on, absl::Time now) {
  absl::MutexLock lock(&mu_);
  if (ended_.contains(session)) {
    return;
  }
  Session& s = Upsert(session, account, now);
  if (on) {
    if (s.subscriptions.size() >= options_.max_subscriptions) {
      return;  // bounded; the agent was already answered (the gateway answers at once)
    }
    s.subscriptions.insert(uri);
  } else {
    s.subscriptions.erase(uri);
  }
}

void SessionTable::SetLogLevel(const std::string& session, const std::string& account, int level,
                               absl::Time now) {
  absl::MutexLock lock(&mu_);
  if (ended_.contains(session)) {
    return;
  }
  Upsert(session, account, now).log_level = level;
}

std::optional<StreamDelivery> SessionTable::Append(Session& s, const std::string& message) {
  uint64_t id = s.next_event_id++;
  s.replay.emplace_back(id, message);
  s.replay_bytes += message.size();
  while (s.replay.size() > options_.replay_events ||
         (s.replay_bytes > options_.replay_bytes && s.replay.size() > 1)) {
    s.replay_bytes -= s.replay.front().second.size();
    s.replay.pop_front();
  }
  if (!s.stream) {
    return std::nullopt;
  }
  return StreamDelivery{*s.stream, id, message, {}};
}

std::vector<StreamDelivery> SessionTable::Fanout(
    const std::string& account, const std::string& message,
    const std::function<bool(const Session&)>& wants) {
  absl::MutexLock lock(&mu_);
  std::vector<StreamDelivery> out;
  auto it = by_account_.find(account);
  if (it == by_account_.end()) {
    return out;
  }
  for (const std::string& id : it->second) {
    Session& s = sessions_[id];
    if (!wants(s)) {
      continue;
    }
    if (auto d = Append(s, message)) {
      d->session = id;
      out.push_back(*std::move(d));
    }
  }
  return out;
}

std::vector<StreamDelivery> SessionTable::Broadcast(const std::string& account,
                                                    const std::string& message) {
  return Fanout(account, message, [](const Session&) { return true; });
}

std::vector<StreamDelivery> SessionTable::ToSubscribers(const std::string& account,
                                                        const std::string& uri,
                                                        const std::string& message) {
  return Fanout(account, message,
                [&uri](const Session& s) { return s.subscriptions.contains(uri); });
}

std::vector<StreamDelivery> SessionTable::ToLogLevel(const std::string& account, int level,
                                                     const std::string& message) {
  // A session that never called logging/setLevel gets no account-wide logs.
  return Fanout(account, message,
                [level](const Session& s) { return s.log_level >= 0 && level >= s.log_level; });
}

void SessionTable::SetPendingLine(const std::string& account, const std::string& line) {
  absl::MutexLock lock(&mu_);
  auto it = by_account_.find(account);
  if (it == by_account_.end()) {
    return;
  }
  for (const std::string& id : it->second) {
    sessions_[id].pending_line = line;
  }
}

std::string SessionTable::TakePendingLine(const std::string& session) {
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(session);
  if (it == sessions_.end()) {
    return "";
  }
  return std::exchange(it->second.pending_line, "");
}

std::vector<SessionTable::Summary> SessionTable::List(const std::string& account,
                                                      absl::Time now) const {
  std::vector<Summary> out;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, s] : sessions_) {
      if (account.empty() || s.account == account) {
        out.push_back(Summary{id, s.account, Counts(s, now), s.stream.has_value(),
                              s.subscriptions.size(), s.last_seen});
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const Summary& a, const Summary& b) {
    return std::tie(a.account, a.session) < std::tie(b.account, b.session);
  });
  return out;
}

size_t SessionTable::size() const {
  absl::MutexLock lock(&mu_);
  return sessions_.size();
}

}  // namespace relay::router
