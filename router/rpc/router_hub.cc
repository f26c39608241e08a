#include "router/rpc/router_hub.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/crypto.h"
#include "common/log.h"
#include "common/metrics.h"

namespace relay::router {

namespace {

// A tab may still hold calls of a router that restarted (its answers come
// late): a restarted router's ids must not meet them (FirstCallId).
uint64_t RandomFirstCallId() {
  uint64_t random = 0;
  for (unsigned char byte : common::RandomBytes(8)) {
    random = random << 8 | byte;
  }
  return FirstCallId(random);
}

// Handles a CallStart and logs where it went (--log_level=debug): the call's
// trace id joins this line to the gateways' lines about it.
void LogRouted(RouterCore& core, uint64_t link_id, relay::v1::GatewayEvent& event, absl::Time now,
               Outbox& out) {
  std::string trace = event.call_start().trace_id();
  std::string account = event.call_start().account();
  size_t first = out.size();
  core.Handle(link_id, event, now, out);
  for (size_t i = first; i < out.size(); ++i) {
    const relay::v1::RouterCommand& command = out[i].command;
    if (command.has_deliver()) {
      common::Log(common::LogLevel::kDebug, "call routed to its tab",
                  {{"call", trace},
                   {"account", account},
                   {"from_gateway", core.GatewayOf(link_id)},
                   {"to_gateway", core.GatewayOf(out[i].link_id)},
                   {"tab_call", command.deliver().call_id()}});
    } else if (command.has_call_done() && command.call_done().has_failure()) {
      common::Log(common::LogLevel::kDebug, "call failed",
                  {{"call", trace},
                   {"account", account},
                   {"reason", FailureName(command.call_done().failure().reason())}});
    }
  }
}

}  // namespace

RouterHub::RouterHub(RouterCoreOptions options)
    : core_(RandomFirstCallId(), options) {}
RouterHub::~RouterHub() = default;

uint64_t RouterHub::AddLink(std::shared_ptr<LinkWriter> writer) {
  absl::MutexLock lock(&mu_);
  uint64_t id = next_link_id_++;
  links_.emplace(id, std::move(writer));
  core_.LinkUp(id);
  return id;
}

template <typename Fn>
auto RouterHub::Apply(Fn fn) {
  Touched touched;
  decltype(fn(core_, std::declval<Outbox&>())) result;
  {
    absl::MutexLock lock(&mu_);
    {
      Outbox out(arena_.arena());
      result = fn(core_, out);
      touched = QueueLocked(out);
      PublishLocked();
    }
    arena_.Reset();
  }
  for (const auto& writer : touched) {
    writer->Flush();
  }
  return result;
}

void RouterHub::RemoveLink(uint64_t link_id) {
  Apply([&](RouterCore& core, Outbox& out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    links_.erase(link_id);
    core.LinkDown(link_id, absl::Now(), out);
    return true;
  });
}

void RouterHub::Handle(uint64_t link_id, relay::v1::GatewayBatch& batch) {
  Apply([&](RouterCore& core, Outbox& out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!links_.contains(link_id)) {
      return false;  // the link ended while this batch was read
    }
    absl::Time now = absl::Now();
    ++batches_in_;
    events_in_ += batch.events_size();
    bool debug = common::LogEnabled(common::LogLevel::kDebug);
    for (relay::v1::GatewayEvent& event : *batch.mutable_events()) {
      if (debug && event.has_call_start()) {
        LogRouted(core, link_id, event, now, out);
      } else {
        core.Handle(link_id, event, now, out);
      }
    }
    return true;
  });
}

bool RouterHub::Kick(const std::string& account, const std::string& reason) {
  return Apply([&](RouterCore& core, Outbox& out) { return core.Kick(account, reason, out); });
}

void RouterHub::EndSession(const std::string& session) {
  Apply([&](RouterCore& core, Outbox& out) {
    core.EndSession(session, out);
    return true;
  });
}

void RouterHub::Sweep() {
  Apply([&](RouterCore& core, Outbox& out) {
    core.Sweep(absl::Now(), out);
    return true;
  });
}

uint64_t RouterHub::AddWatcher(std::shared_ptr<WatchWriter> writer) {
  absl::MutexLock lock(&mu_);
  uint64_t id = next_link_id_++;
  watchers_.emplace(id, std::move(writer));
  core_.set_watched(true);
  return id;
}

void RouterHub::RemoveWatcher(uint64_t watcher_id) {
  absl::MutexLock lock(&mu_);
  watchers_.erase(watcher_id);
  if (watchers_.empty()) {
    core_.set_watched(false);
    core_.TakeWatchEvents();
  }
}

void RouterHub::EndWatchers() {
  absl::MutexLock lock(&mu_);
  for (const auto& [id, watcher] : watchers_) {
    watcher->End();
  }
}

void RouterHub::PublishLocked() {
  if (watchers_.empty()) {
    return;
  }
  std::vector<relay::v1::WatchEvent> events = core_.TakeWatchEvents();
  if (events.empty()) {
    return;
  }
  int64_t now_ms = absl::ToUnixMillis(absl::Now());
  for (relay::v1::WatchEvent& event : events) {
    event.set_at_unix_ms(now_ms);
    for (const auto& [id, watcher] : watchers_) {
      watcher->Push(event);
    }
  }
}

RouterHub::Touched RouterHub::QueueLocked(Outbox& out) {
  Touched touched;
  commands_out_ += out.size();
  for (Outgoing& o : out) {
    auto it = links_.find(o.link_id);
    if (it == links_.end()) {
      continue;  // that gateway's link has ended
    }
    it->second->Push(o.command);
    // Usually one or two links: a linear look is the cheapest set.
    if (std::find(touched.begin(), touched.end(), it->second) == touched.end()) {
      touched.push_back(it->second);
    }
  }
  return touched;
}

std::string RouterHub::RenderMetrics() const {
  absl::MutexLock lock(&mu_);
  const RouterCounts& c = core_.counts();
  common::MetricsText text;
  text.Add("relay_router_links", "Gateways linked to this router.", "gauge", core_.LinkCount());
  text.Add("relay_router_tabs", "Tabs known to this router.", "gauge",
           core_.tabs().size());
  text.Add("relay_router_sessions", "Agent sessions known to this router.", "gauge",
           core_.sessions().size());
  text.Add("relay_router_calls_in_flight", "Forwarded calls waiting for their tab.", "gauge",
           core_.CallsInFlight());
  text.Add("relay_router_forwards_total", "Forwarded agent requests.", "counter", c.forwards);
  text.Add("relay_router_streams_cut_total",
           "Agents' streams ended because their account was over its fan-out budget.", "counter",
           c.streams_cut);
  text.Add("relay_router_link_batches_received_total", "Batches read from gateway links.",
           "counter", batches_in_);
  text.Add("relay_router_link_events_received_total", "Events read from gateway links.", "counter",
           events_in_);
  text.Add("relay_router_link_commands_sent_total", "Commands queued for gateway links.",
           "counter", commands_out_);
  const std::pair<const char*, uint64_t> outcomes[] = {
      {"result", c.results},       {"error", c.errors},         {"no_tab", c.no_tab},
      {"tab_gone", c.tab_gone},    {"displaced", c.displaced},  {"cancelled", c.cancelled},
      {"too_many", c.too_many}};
  for (const auto& [name, value] : outcomes) {
    text.Add("relay_router_forward_outcomes_total", "How forwarded requests ended.", "counter",
             value, absl::StrCat("outcome=\"", name, "\""));
  }
  return text.str();
}

}  // namespace relay::router
