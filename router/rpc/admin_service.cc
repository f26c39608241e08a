#include "router/rpc/admin_service.h"

#include <deque>
#include <functional>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/grpc/async_unary.h"
#include "common/log.h"

namespace relay::router {

using Service = relay::v1::RouterAdmin::AsyncService;
using relay::v1::WatchEvent;

namespace {

// One operator's RouterAdmin.Watch: accepted, the initial metadata sent (the
// watcher then knows it misses nothing), then the hub's events written one at
// a time until the operator hangs up or falls too far behind. Owns itself
// (self_) until every operation it started has come back.
class WatchStream final : public WatchWriter, public std::enable_shared_from_this<WatchStream> {
 public:
  enum class Op { kAccepted, kWritten, kFinished, kDone };

  WatchStream(RouterHub& hub, Service& service, common::CqLoop& loop,
              std::function<void()> accepted)
      : hub_(hub), loop_(loop), accepted_(std::move(accepted)) {
    context_.AsyncNotifyWhenDone(TagFor(Op::kDone));
    service.RequestWatch(&context_, &request_, &writer_, loop.server_cq(), loop.server_cq(),
                         TagFor(Op::kAccepted));
  }
  void Own() { self_ = shared_from_this(); }

  // On the loop thread.
  void OnCompleted(Op op, bool ok);

  // Any thread (the hub's lock is held).
  void Push(const WatchEvent& event) override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (ended_) {
      return;
    }
    if (queue_.size() >= kMaxQueued) {
      // An operator who does not read: end the stream (OnDone follows) rather than
      // hold the shard's memory.
      ended_ = true;
      context_.TryCancel();
      return;
    }
    queue_.push_back(event);
    StartWriteLocked();
  }

  void End() override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    ended_ = true;
    context_.TryCancel();
  }

 private:
  static constexpr size_t kMaxQueued = 10000;
  void StartWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (writing_ || ended_ || queue_.empty() || loop_.stopping()) {
      return;
    }
    writing_ = true;
    ++pending_;
    writer_.Write(queue_.front(), TagFor(Op::kWritten));
  }
  using OpTag = common::OpTag<WatchStream, Op>;
  friend OpTag;
  common::CqTag* TagFor(Op op) { return &tags_[static_cast<int>(op)]; }

  RouterHub& hub_;
  common::CqLoop& loop_;
  std::function<void()> accepted_;
  OpTag tags_[4] = {{this, Op::kAccepted}, {this, Op::kWritten}, {this, Op::kFinished},
                    {this, Op::kDone}};
  grpc::ServerContext context_;
  relay::v1::WatchRequest request_;
  grpc::ServerAsyncWriter<WatchEvent> writer_{&context_};
  uint64_t watcher_id_ = 0;  // the loop thread's
  std::shared_ptr<WatchStream> self_;

  absl::Mutex mu_;
  std::deque<WatchEvent> queue_ ABSL_GUARDED_BY(mu_);
  // The initial metadata counts as a write: events queue behind it.
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  int pending_ ABSL_GUARDED_BY(mu_) = 1;  // the done notification
  bool done_ ABSL_GUARDED_BY(mu_) = false;
};

void WatchStream::OnCompleted(Op op, bool ok) {
  if (op == Op::kAccepted) {
    if (!ok) {
      self_.reset();  // the server is stopping; no call was matched
      return;
    }
    if (loop_.stopping()) {
      return;  // its done tag may still come: keep this
    }
    accepted_();
    if (!common::CallerIs(context_, common::kRoleOperator)) {
      absl::MutexLock lock(&mu_);
      ended_ = true;
      ++pending_;
      writer_.Finish(common::DeniedUnless(common::kRoleOperator, "RouterAdmin.Watch"),
                     TagFor(Op::kFinished));
      return;
    }
    {
      absl::MutexLock lock(&mu_);
      writing_ = true;        // events queue behind the metadata
      queue_.emplace_back();  // stands for the metadata until it is sent
    }
    // Registered before the metadata tells the operator the watch is on, so
    // that nothing after that is missed. Outside our lock: the hub takes its
    // own, then ours (Push).
    watcher_id_ = hub_.AddWatcher(shared_from_this());
    absl::MutexLock lock(&mu_);
    ++pending_;
    // Tells relayctl that the watch is on (a failed call also ends the wait
    // for metadata, without this entry).
    context_.AddInitialMetadata("relay-watch", "on");
    writer_.SendInitialMetadata(TagFor(Op::kWritten));
    return;
  }
  bool release = false;
  bool remove = false;
  {
    absl::MutexLock lock(&mu_);
    --pending_;
    if (op == Op::kWritten) {
      queue_.pop_front();
      writing_ = false;
      if (ok) {
        StartWriteLocked();
      } else {
        ended_ = true;  // the operator went; the done notification follows
      }
    } else if (op == Op::kDone) {
      done_ = true;
      ended_ = true;
      remove = watcher_id_ != 0;
    }
    release = done_ && pending_ == 0;
  }
  if (remove) {
    hub_.RemoveWatcher(watcher_id_);  // outside our lock: the hub takes its own, then ours
    watcher_id_ = 0;
  }
  if (release) {
    self_.reset();  // may delete this
  }
}

}  // namespace

void RouterAdminService::ServeWatch(common::CqLoop& loop) {
  auto stream = std::make_shared<WatchStream>(hub_, service_, loop, [this, &loop] {
    ServeWatch(loop);  // the next operator
  });
  stream->Own();
}

void RouterAdminService::Serve(common::CqLoop& loop) {
  ServeWatch(loop);
  common::ServeUnary(
      loop, &service_, &Service::RequestListTabs, common::kRoleOperator,
      "RouterAdmin.ListTabs",
      [this](const relay::v1::ListTabsRequest& request, relay::v1::ListTabsResponse* response) {
        hub_.Read([&](const RouterCore& core) {
          for (const TabRecord& tab : core.tabs().List(request.account())) {
            auto* info = response->add_tabs();
            info->set_account(tab.account);
            info->set_role(tab.role);
            info->set_gateway_id(tab.gateway_id);
            info->set_tab_id(tab.ref.tab_id);
            info->set_client_name(tab.client_name);
            info->set_client_version(tab.client_version);
            info->set_connected_at_unix_ms(absl::ToUnixMillis(tab.connected_at));
            info->set_calls_in_flight(core.CallsInFlight(tab.ref));
          }
          return 0;
        });
        return grpc::Status::OK;
      });

  common::ServeUnary(
      loop, &service_, &Service::RequestListSessions, common::kRoleOperator,
      "RouterAdmin.ListSessions",
      [this](const relay::v1::ListSessionsRequest& request,
             relay::v1::ListSessionsResponse* response) {
        auto sessions = hub_.Read([&](const RouterCore& core) {
          return core.sessions().List(request.account(), absl::Now());
        });
        for (const SessionTable::Summary& s : sessions) {
          auto* info = response->add_sessions();
          info->set_session_id(s.session);
          info->set_account(s.account);
          info->set_counts_as_agent(s.counts);
          info->set_has_stream(s.has_stream);
          info->set_subscriptions(static_cast<uint32_t>(s.subscriptions));
          info->set_last_seen_unix_ms(absl::ToUnixMillis(s.last_seen));
        }
        return grpc::Status::OK;
      });

  common::ServeUnary(
      loop, &service_, &Service::RequestGetStats, common::kRoleOperator,
      "RouterAdmin.GetStats",
      [this](const relay::v1::GetStatsRequest&, relay::v1::GetStatsResponse* response) {
        hub_.Read([&](const RouterCore& core) {
          const RouterCounts& c = core.counts();
          response->set_links(core.LinkCount());
          response->set_tabs(core.tabs().size());
          response->set_sessions(core.sessions().size());
          response->set_forwards(c.forwards);
          response->set_results(c.results);
          response->set_errors(c.errors);
          response->set_no_tab(c.no_tab);
          response->set_tab_gone(c.tab_gone);
          response->set_displaced(c.displaced);
          response->set_cancelled(c.cancelled);
          return 0;
        });
        return grpc::Status::OK;
      });

  common::ServeUnary(
      loop, &service_, &Service::RequestKick, common::kRoleOperator,
      "RouterAdmin.Kick",
      [this](const relay::v1::KickRequest& request, relay::v1::KickResponse* response) {
        bool kicked = hub_.Kick(request.account(), "an operator disconnected this tab");
        if (kicked) {
          common::LogInfo("tab kicked by an operator");
        }
        response->set_kicked(kicked);
        return grpc::Status::OK;
      });

  common::ServeUnary(
      loop, &service_, &Service::RequestEndSession, common::kRoleOperator,
      "RouterAdmin.EndSession",
      [this](const relay::v1::EndSessionRequest& request, relay::v1::EndSessionResponse*) {
        hub_.EndSession(request.session_id());
        return grpc::Status::OK;
      });
}

}  // namespace relay::router
