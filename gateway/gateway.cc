#include "gateway/gateway.h"

#include <functional>
#include <thread>
#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <grpcpp/completion_queue.h>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/grpc/cq_loop.h"
#include "common/crypto.h"
#include "common/link/link_frame.h"
#include "common/log.h"
#include "gateway/core/catalogue.h"
#include "gateway/net/agent/agent_stream.h"
#include "gateway/net/io_pool.h"
#include "gateway/net/shards/link_router_client.h"
#include "gateway/net/listener.h"
#include "gateway/net/agent/response_writer.h"
#include "gateway/net/registry.h"
#include "gateway/net/shards/router_commands.h"
#include "gateway/rpc/grpc_clients.h"
#include "gateway/core/session_id.h"
#include "gateway/core/session_state.h"
#include "gateway/net/tab/tab_session.h"
#include "gateway/core/trusted_proxies.h"

namespace relay::gateway {

// What a Gateway owns, in the order it is built (and the reverse of the order
// it is torn down in).
class Gateway::Parts {
 public:
  Parts(GatewayConfig config, std::unique_ptr<CatalogueFile> catalogue, TrustedProxies proxies)
      : config(std::move(config)),
        catalogue(std::move(catalogue)),
        proxies(std::move(proxies)),
        signer(this->config.session_secret),
        resumes(this->config.session_secret),
        dispatcher(signer, *this->catalogue, ended, this->config.dispatch),
        commands(tabs, streams, ended, state.metrics.router_link_downs),
        io(this->config.threads),
        grpc_loop(std::make_unique<grpc::CompletionQueue>()),
        catalogue_timer(io.First()) {}

  GatewayConfig config;
  std::unique_ptr<CatalogueFile> catalogue;
  TrustedProxies proxies;
  SessionIdSigner signer;
  TabResumeSigner resumes;
  // Users whose sign-in ended within a chain of credentials' lifetime (at most 100,000: past
  // that, every chain that began before the oldest one dropped is refused).
  SignedOutUsers signed_out{TabResumeSigner::kChainLifetime, 100'000};
  // The last revocations heard, for the streams whose verdicts were on their way meanwhile.
  RecentRevocations revocations;
  EndedSessions ended;
  TouchThrottle touches;
  McpDispatcher dispatcher;
  GatewayState state;
  Registry<TabSession> tabs;
  Registry<AgentStream> streams;
  RouterCommands commands;
  IoPool io;
  // Every gRPC completion of the gateway, on one thread of its own.
  common::CqLoop grpc_loop;
  std::unique_ptr<AuthClient> auth;
  std::unique_ptr<RouterClient> router;
  std::shared_ptr<Listener> listener;
  boost::asio::steady_timer catalogue_timer;  // on the first I/O thread

  // The catalogue file is re-read when it changes; every open stream hears of it.
  void WatchCatalogue();
  // A load balancer sends a gateway requests as soon as it listens (nginx has no readiness
  // check): until its link to a shard is up, that shard's accounts' calls would fail at once
  // ("the relay is restarting"), which a rolling restart must not cause. So the listener
  // opens once every shard is linked, or after config.start_link_wait (a shard that is down
  // must not keep the others' accounts out). Only at start, on the main thread.
  void WaitForShards();
};

void Gateway::Parts::WaitForShards() {
  absl::Time deadline = absl::Now() + config.start_link_wait;
  while (router->ShardsUp() < config.routers.size() && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  if (router->ShardsUp() < config.routers.size()) {
    common::LogWarn("listening before every router shard is linked",
                    {{"linked", absl::StrCat(router->ShardsUp(), " of ", config.routers.size())}});
  }
}

void Gateway::Parts::WatchCatalogue() {
  catalogue_timer.expires_after(absl::ToChronoMilliseconds(config.catalogue_poll));
  catalogue_timer.async_wait([this](boost::system::error_code ec) {
    if (ec) {
      return;
    }
    auto before = catalogue->Get();
    auto changed = catalogue->Refresh();
    if (!changed.ok()) {
      common::LogWarn("catalogue unreadable; keeping the last good one",
                      {{"error", changed.status().message()}});
    } else if (*changed) {
      auto after = catalogue->Get();
      common::LogInfo("catalogue changed");
      // Each stream hears of the lists that changed in its role's view only.
      absl::flat_hash_map<std::string, std::vector<std::string>> by_role;
      for (auto& stream : streams.Snapshot()) {
        auto [it, fresh] = by_role.try_emplace(stream->role());
        if (fresh) {
          it->second = ListChangedNotices(before->View(stream->role()), after->View(stream->role()));
        }
        for (const std::string& notice : it->second) {
          stream->PostNotice(notice);
        }
      }
    }
    WatchCatalogue();
  });
}

namespace {

// Every message crosses a link in one frame, and a peer ends the whole link
// (every call on it) at a frame over common::kMaxLinkFrameBytes. So the limits
// on what the gateway takes in must keep the largest frame under it: a call's
// answer carries the tab's answer and its view line, each a tab message; a
// request carries the agent's body. 1 MiB is left for the other fields.
absl::Status CheckMessageLimits(const GatewayOptions& options) {
  constexpr size_t kMiB = 1 << 20;
  constexpr size_t kRoom = common::kMaxLinkFrameBytes - kMiB;
  if (options.max_body_bytes < 1 || options.max_body_bytes > kRoom) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max_body_bytes must be between 1 and ", kRoom, " (", kRoom / kMiB,
        " MiB): a request crosses the link to the router in one frame of at most ",
        common::kMaxLinkFrameBytes / kMiB, " MiB"));
  }
  if (options.max_tab_message_bytes < 1 || options.max_tab_message_bytes > kRoom / 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max_tab_message_bytes must be between 1 and ", kRoom / 2, " (", kRoom / 2.0 / kMiB,
        " MiB): an answer and its view line cross the link in one frame of at most ",
        common::kMaxLinkFrameBytes / kMiB, " MiB"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Gateway>> Gateway::Start(GatewayConfig config) {
  if (config.routers.empty()) {
    return absl::InvalidArgumentError("--router_addrs is empty");
  }
  if (absl::Status limits = CheckMessageLimits(config.options); !limits.ok()) {
    return limits;
  }
  auto catalogue = CatalogueFile::Open(config.catalogue_path);
  if (!catalogue.ok()) {
    return absl::Status(catalogue.status().code(),
                        absl::StrCat("catalogue unavailable: ", catalogue.status().message()));
  }
  auto proxies = TrustedProxies::Parse(config.trusted_proxies);
  if (!proxies.ok()) {
    return proxies.status();
  }
  config.threads = std::max(1, config.threads);
  // One response holds a batch's answers: they must fit what its writer may
  // queue, or the whole batch is lost.
  config.dispatch.max_batch_answer_bytes = MaxQueuedBytes(config.options) - 4096;
  auto parts = std::make_unique<Parts>(std::move(config), *std::move(catalogue),
                                       *std::move(proxies));
  Parts& p = *parts;
  GatewayState& state = p.state;
  state.gate = RequestGate(p.config.gate);
  state.options = p.config.options;
  state.options.max_json_depth = p.config.dispatch.max_json_depth;
  state.gateway_id = common::HexEncode(common::RandomBytes(4));
  state.dispatcher = &p.dispatcher;
  state.ended = &p.ended;
  state.touches = &p.touches;
  state.proxies = &p.proxies;
  state.tabs = &p.tabs;
  state.resumes = &p.resumes;
  state.signed_out = &p.signed_out;
  state.revocations = &p.revocations;
  state.streams = &p.streams;

  p.grpc_loop.Start();
  // The I/O threads run first: the shards' links live on the first, and the
  // router client, if this start fails further on, waits there for them to end.
  p.io.Run();
  // A revocation ends what is open with it: the token's streams, and with a
  // user-wide one (the password changed, the account went) the user's tabs.
  p.auth = NewGrpcAuthClient(p.config.authsvc, p.config.grpc_tls, p.grpc_loop,
                             [&p](const Revocation& revoked) {
                               p.state.metrics.revocations.Add();
                               // Noted before the streams are walked: a stream that registers
                               // meanwhile, its verdict asked before this, finds it there.
                               p.revocations.Add(revoked.user, revoked.token_sha256);
                               for (auto& stream : p.streams.Snapshot()) {
                                 stream->PostRevoked(revoked);
                               }
                               if (!revoked.user.empty()) {
                                 // Before the tabs close: none comes back with its credential.
                                 p.signed_out.Add(revoked.user, absl::Now());
                                 for (auto& tab : p.tabs.Snapshot()) {
                                   tab->PostSignedOut(revoked.user);
                                 }
                               }
                             });
  auto router = NewLinkRouterClient(p.config.routers, p.config.grpc_tls, state.gateway_id,
                                    p.commands, p.grpc_loop, p.io.First());
  if (!router.ok()) {
    return router.status();
  }
  p.router = *std::move(router);
  p.commands.SetReady();
  state.auth = p.auth.get();
  state.router = p.router.get();
  state.Wire();
  p.WaitForShards();

  auto listener = Listener::Create(p.io, p.config.listen, state);
  if (!listener.ok()) {
    return listener.status();
  }
  p.listener = *std::move(listener);
  p.listener->Run();
  p.WatchCatalogue();
  return std::unique_ptr<Gateway>(new Gateway(std::move(parts)));
}

Gateway::Gateway(std::unique_ptr<Parts> parts) : parts_(std::move(parts)) {}

// Torn down in the order that lets each part finish with the others still
// there: no new connection; the router shards (each waits for its link's end,
// which runs on the first I/O thread, and for its relink alarm on the gRPC
// loop) and the auth client (its revocation watch ends on the gRPC loop) while
// the I/O threads and the loop still run; then the loop, then the I/O
// threads. The members go last, in the reverse of their order: the sessions
// the I/O contexts' handlers still hold go with the contexts, before the
// state they point into. (The process leaves with _Exit after Drain and never
// runs this; the in-process test, tests/inprocess/, does.)
Gateway::~Gateway() {
  Parts& p = *parts_;
  p.listener->Stop();
  boost::asio::post(p.catalogue_timer.get_executor(), [&p] { p.catalogue_timer.cancel(); });
  p.router.reset();
  p.auth.reset();
  p.grpc_loop.Stop();
  p.io.Stop();
}

int Gateway::port() const { return parts_->listener->port(); }

const std::string& Gateway::id() const { return parts_->state.gateway_id; }

bool Gateway::Drain() {
  Parts& p = *parts_;
  common::LogInfo("draining", {{"calls", static_cast<int64_t>(p.router->CallsInFlight())},
                               {"tabs", static_cast<int64_t>(p.tabs.size())},
                               {"timeout_ms", absl::ToInt64Milliseconds(p.config.drain_timeout)}});
  p.state.draining.store(true);
  p.listener->Stop();
  // On the timer's thread: its handler may be running.
  boost::asio::post(p.catalogue_timer.get_executor(), [&p] { p.catalogue_timer.cancel(); });
  for (auto& tab : p.tabs.Snapshot()) {
    tab->PostDrain();
  }
  auto wait_until = [](absl::Time deadline, const std::function<bool()>& done) {
    // Shutdown only: a short poll is simpler than a signal from every session.
    while (!done() && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    return done();
  };
  bool drained = wait_until(absl::Now() + p.config.drain_timeout, [&p] {
    return p.router->CallsInFlight() == 0 && p.tabs.size() == 0;
  });
  if (!drained) {
    common::LogWarn("drain deadline passed; ending what is left",
                    {{"calls", static_cast<int64_t>(p.router->CallsInFlight())},
                     {"tabs", static_cast<int64_t>(p.tabs.size())}});
    p.router->CancelAll(RouterClient::CancelReason::kShutdown);
  }
  // A call leaves CallsInFlight when the links' thread takes its outcome; its
  // answer is written once the agent's I/O thread runs the hand-over, which
  // may still wait in that thread's mailbox (or in the links' batch under
  // way). Without this, a gateway with no tabs or streams left could exit
  // with an answered call's answer unwritten.
  p.io.Settle(absl::Seconds(1));
  for (auto& tab : p.tabs.Snapshot()) {
    tab->PostGoingAway();
  }
  for (auto& stream : p.streams.Snapshot()) {
    stream->PostEnd();
  }
  // Let the last answers and close frames go out (a second at most): the
  // tabs' last replies and the cancellations are on the links, queued by the
  // I/O threads' deferred flushes.
  wait_until(absl::Now() + absl::Seconds(1), [&p] {
    return p.tabs.size() == 0 && p.streams.size() == 0 && p.router->Flushed();
  });
  common::LogInfo("stopped", {{"drained", drained}});
  return drained;
}

}  // namespace relay::gateway
