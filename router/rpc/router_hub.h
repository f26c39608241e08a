#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/synchronization/mutex.h"
#include "common/link/frame_arena.h"
#include "relay/v1/router.pb.h"
#include "router/core/router_core.h"

namespace relay::router {

// The write side of one gateway link, as the hub sees it. Thread-safe.
class LinkWriter {
 public:
  virtual ~LinkWriter() = default;
  // Queues a command for the next batch, serialised at once (dropped once the
  // link is closing).
  virtual void Push(const relay::v1::RouterCommand& command) = 0;
  // Starts a write if none is in flight.
  virtual void Flush() = 0;
};

// The write side of one operator's watch stream, as the hub sees it.
// Thread-safe; Push never calls back into the hub.
class WatchWriter {
 public:
  virtual ~WatchWriter() = default;
  // Queues the event and starts a write if none is in flight.
  virtual void Push(const relay::v1::WatchEvent& event) = 0;
  // Ends the stream (the router is stopping).
  virtual void End() = 0;
};

// The router core behind one lock, and the write side of every gateway link.
// Thread-safe. Every entry point runs the core under the lock, hands the
// commands it returned to their links' writers in order (still under the lock,
// so two threads' commands for one link never swap), and starts the writes
// after releasing it. Links call it from the one thread that drives them; the
// operators' RPCs and the sweeper from theirs.
class RouterHub {
 public:
  explicit RouterHub(RouterCoreOptions options = {});
  ~RouterHub();

  uint64_t AddLink(std::shared_ptr<LinkWriter> writer) ABSL_LOCKS_EXCLUDED(mu_);
  void RemoveLink(uint64_t link_id) ABSL_LOCKS_EXCLUDED(mu_);
  // A batch of one gateway's events.
  void Handle(uint64_t link_id, relay::v1::GatewayBatch& batch) ABSL_LOCKS_EXCLUDED(mu_);
  bool Kick(const std::string& account, const std::string& reason) ABSL_LOCKS_EXCLUDED(mu_);
  void EndSession(const std::string& session) ABSL_LOCKS_EXCLUDED(mu_);
  // Once a second: idle sessions stop counting as agents.
  void Sweep() ABSL_LOCKS_EXCLUDED(mu_);
  // Operators' watch streams: from AddWatcher on, every event of the core is
  // pushed to the writer, in order, until RemoveWatcher.
  uint64_t AddWatcher(std::shared_ptr<WatchWriter> writer) ABSL_LOCKS_EXCLUDED(mu_);
  void RemoveWatcher(uint64_t watcher_id) ABSL_LOCKS_EXCLUDED(mu_);
  // Before the server shuts down: watchers' streams end at once rather than
  // hold the shutdown to its deadline.
  void EndWatchers() ABSL_LOCKS_EXCLUDED(mu_);

  // Runs fn on the core under the lock (operators' views).
  template <typename Fn>
  auto Read(Fn fn) const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return fn(core_);
  }
  std::string RenderMetrics() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Runs fn(core, outbox) under the lock, queues what it returned on the
  // links' writers, and starts their writes after releasing the lock.
  template <typename Fn>
  auto Apply(Fn fn);
  // The writers an entry point queued on: usually one or two.
  using Touched = absl::InlinedVector<std::shared_ptr<LinkWriter>, 4>;
  // Queues out on the writers; returns them for Flush.
  Touched QueueLocked(Outbox& out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Pushes the core's watch events to every watcher (under the lock, so that
  // every watcher sees them in the core's order).
  void PublishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  RouterCore core_ ABSL_GUARDED_BY(mu_);
  // Every entry point's outbox is on this arena, reset after each (its first
  // block kept, room for a busy link batch's commands: a few dozen calls'
  // deliveries and answers, their strings' bytes moved in, not copied): the
  // commands of a link batch cost no allocation each, and an outbox none of
  // its own. What it held is serialised into the links' queues by then.
  // (Protobuf gives the kept first block to the thread that reset the arena
  // last: the links' thread, which makes nearly every entry; the sweeper's and
  // the operators' entries may take blocks of their own.)
  common::FrameArena<32 << 10> arena_ ABSL_GUARDED_BY(mu_);
  // How well the links batch: messages per batch, both ways.
  uint64_t batches_in_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t events_in_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t commands_out_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_link_id_ ABSL_GUARDED_BY(mu_) = 1;
  absl::flat_hash_map<uint64_t, std::shared_ptr<LinkWriter>> links_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, std::shared_ptr<WatchWriter>> watchers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace relay::router
