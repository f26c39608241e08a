#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/fifo.h"

namespace relay::router {

// Where a session's GET stream is open: a gateway link and the gateway's id for it.
struct StreamRef {
  uint64_t link_id = 0;
  uint64_t stream_id = 0;
  friend bool operator==(const StreamRef&, const StreamRef&) = default;
};

// One event for a GET stream, with the session's event id.
struct StreamDelivery {
  StreamRef stream;
  uint64_t event_id = 0;
  std::string message;
  std::string session;  // whose stream it is
};

struct SessionTableOptions {
  absl::Duration active_window = absl::Seconds(60);  // counts as an agent this long after a request
  absl::Duration forget_after = absl::Hours(1);       // idle records are dropped (ids stay valid)
  size_t replay_events = 256;                         // per session, for Last-Event-ID
  size_t replay_bytes = 1 << 20;                      // per session, whichever bound comes first
  // Records per account; beyond, the least recently seen is forgotten (its id
  // stays valid and its record comes back on its next request).
  size_t max_sessions_per_account = 256;
  size_t max_subscriptions = 1000;  // per session; more are ignored
};

// The agent sessions of the accounts on this shard: who counts as a connected
// agent, subscriptions, log levels, the pending "view changed" line, the GET
// stream and its replay buffer. Soft state: a record is recreated by the next
// Touch or StreamOpen. Thread-safe; plain C++; time is passed in.
class SessionTable {
 public:
  explicit SessionTable(SessionTableOptions options = {}) : options_(options) {}

  // Each returns the accounts whose agent count changed (at most one here).
  std::vector<std::string> Touch(const std::string& session, const std::string& account,
                                 absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<std::string> End(const std::string& session) ABSL_LOCKS_EXCLUDED(mu_);
  // Opens the stream and returns the buffered events after last_event_id.
  std::vector<StreamDelivery> OpenStream(const std::string& session, const std::string& account,
                                         StreamRef stream, uint64_t last_event_id,
                                         absl::Time now, std::vector<std::string>* changed)
      ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<std::string> CloseStream(const std::string& session, StreamRef stream,
                                       absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  // A gateway link ended: its streams are closed.
  std::vector<std::string> CloseLink(uint64_t link_id, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  // Accounts whose count dropped because sessions went idle; forgets old records.
  std::vector<std::string> Sweep(absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);

  uint32_t AgentCount(const std::string& account, absl::Time now) const ABSL_LOCKS_EXCLUDED(mu_);
  bool IsEnded(const std::string& session) const ABSL_LOCKS_EXCLUDED(mu_);
  // Whether a record of the session is kept; its account ("" when none).
  bool Contains(const std::string& session) const ABSL_LOCKS_EXCLUDED(mu_);
  std::string AccountOf(const std::string& session) const ABSL_LOCKS_EXCLUDED(mu_);

  void Subscribe(const std::string& session, const std::string& account, const std::string& uri,
                 bool on, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  void SetLogLevel(const std::string& session, const std::string& account, int level,
                   absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);

  // Events for the GET streams of the account's sessions, each numbered and
  // buffered for replay. Sessions without an open stream buffer it only.
  // To all, to the subscribers of uri, or to the sessions whose level admits level.
  std::vector<StreamDelivery> Broadcast(const std::string& account, const std::string& message)
      ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<StreamDelivery> ToSubscribers(const std::string& account, const std::string& uri,
                                            const std::string& message) ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<StreamDelivery> ToLogLevel(const std::string& account, int level,
                                         const std::string& message) ABSL_LOCKS_EXCLUDED(mu_);

  // Every session of the account remembers line for its next tool result.
  void SetPendingLine(const std::string& account, const std::string& line)
      ABSL_LOCKS_EXCLUDED(mu_);
  std::string TakePendingLine(const std::string& session) ABSL_LOCKS_EXCLUDED(mu_);

  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);

  struct Summary {
    std::string session;
    std::string account;
    bool counts = false;
    bool has_stream = false;
    size_t subscriptions = 0;
    absl::Time last_seen;
  };
  // The sessions of account (all when empty), ordered by account then id.
  std::vector<Summary> List(const std::string& account, absl::Time now) const
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Session {
    std::string account;
    absl::Time last_seen;
    std::optional<StreamRef> stream;
    absl::flat_hash_set<std::string> subscriptions;
    int log_level = -1;  // -1: logging/setLevel never called: no account-wide logs
    std::string pending_line;
    uint64_t next_event_id = 1;
    common::Fifo<std::pair<uint64_t, std::string>> replay;
    size_t replay_bytes = 0;
  };

  Session& Upsert(const std::string& session, const std::string& account, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forgets the account's least recently seen record (one without a stream if
  // there is one).
  void ForgetOldest(const std::string& account) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool Counts(const Session& s, absl::Time now) const;
  // Adds account to out when its count differs from the last one reported.
  void ReportChange(const std::string& account, absl::Time now, std::vector<std::string>& out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint32_t CountLocked(const std::string& account, absl::Time now) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Which agent a session is of: the token key of a 2026-07-28 agent's
  // sessions, else the session itself.
  static absl::string_view AgentOf(absl::string_view session);
  static bool IsListen(absl::string_view session) { return session.substr(0, 2) == "l."; }
  void EraseLocked(const std::string& session) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::optional<StreamDelivery> Append(Session& s, const std::string& message)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Appends message for every session of the account that wants it.
  std::vector<StreamDelivery> Fanout(const std::string& account, const std::string& message,
                                     const std::function<bool(const Session&)>& wants)
      ABSL_LOCKS_EXCLUDED(mu_);

  const SessionTableOptions options_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Session> sessions_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, absl::flat_hash_set<std::string>> by_account_
      ABSL_GUARDED_BY(mu_);
  // Ended sessions stay refused; bounded, oldest forgotten first.
  absl::flat_hash_set<std::string> ended_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> ended_order_ ABSL_GUARDED_BY(mu_);
  // Last count sent per account, to report only changes.
  absl::flat_hash_map<std::string, uint32_t> last_count_ ABSL_GUARDED_BY(mu_);
  absl::Time last_now_ ABSL_GUARDED_BY(mu_);
};

// RFC 5424 level names as MCP uses them, 0 (debug) to 7 (emergency); -1 unknown.
int LogLevelRank(const std::string& name);

}  // namespace relay::router
