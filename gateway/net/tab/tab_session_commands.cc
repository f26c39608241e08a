// TabSession, what the router sends a tab (each posted to the tab's I/O
// thread by RouterCommands): its agents' count, answers to its requests, calls
// delivered and cancelled, displacement, its shard's link going and coming
// back, the drain, and its person signing out. The rest of the session is in
// tab_session.cc.
#include <utility>

#include <boost/asio/post.hpp>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "gateway/core/jsonrpc.h"
#include "gateway/core/tab_protocol.h"
#include "gateway/net/gathered_posts.h"
#include "gateway/net/tab/tab_session.h"

namespace relay::gateway {

namespace asio = boost::asio;

void TabSession::PostAgents(uint32_t count) {
  GatheredPosts::Post(socket_.get_executor(), [self = shared_from_this(), count] {
    if (self->phase_ == State::kLive) {
      self->Send(EncodeNotification("relay/agents", {{"count", count}}));
    }
  });
}

void TabSession::PostResponse(std::string tab_request_id, bool is_error, std::string payload) {
  GatheredPosts::Post(socket_.get_executor(), [self = shared_from_this(),
                                           id = std::move(tab_request_id), is_error,
                                           payload = std::move(payload)] {
    if (self->phase_ != State::kLive) {
      return;
    }
    auto parsed_id = nlohmann::json::parse(id, nullptr, false);
    self->Send(is_error ? EncodeRawError(parsed_id, payload) : EncodeResult(parsed_id, payload));
  });
}

void TabSession::PostDeliver(uint64_t call_id, std::string method, std::string params) {
  deliveries_pending_.fetch_add(1);  // before the link's end can ask MayHoldCalls()
  GatheredPosts::Post(socket_.get_executor(), [self = shared_from_this(), call_id,
                                           method = std::move(method),
                                           params = std::move(params)]() mutable {
    self->Deliver(call_id, std::move(method), std::move(params));
    // Held now if kept: noted before the delivery stops counting as pending.
    self->NoteCalls();
    self->deliveries_pending_.fetch_sub(1);
  });
}

void TabSession::Deliver(uint64_t call_id, std::string method, std::string params) {
  if (phase_ == State::kAnnouncing) {
    // The router made the tab routable just before it accepted it: hold the
    // call until the hello is answered.
    calls_.Hold({call_id, std::move(method), std::move(params)});
    return;
  }
  if (phase_ != State::kLive) {
    Reply(call_id, /*is_error=*/true,
          EncodeErrorObject(kInternalError, "the editor is disconnecting"));
    return;
  }
  if (draining_) {
    Reply(call_id, /*is_error=*/true,
          EncodeErrorObject(kInternalError,
                            "the editor's relay gateway is shutting down; try again in a "
                            "few seconds, when the editor has reconnected"));
    return;
  }
  calls_.Sent(call_id, method);
  Send(EncodeRequest(call_id, method, params));
}

void TabSession::PostCancel(uint64_t call_id, std::string reason) {
  GatheredPosts::Post(socket_.get_executor(),
                      [self = shared_from_this(), call_id, reason = std::move(reason)] {
    // A call still held (the hello not yet answered) is simply never sent.
    TabCalls::GivenUp given_up = self->calls_.GiveUp(call_id);
    if (given_up == TabCalls::GivenUp::kNone) {
      return;
    }
    if (given_up == TabCalls::GivenUp::kWasSent && self->phase_ == State::kLive) {
      self->Send(EncodeNotification("notifications/cancelled",
                                    {{"requestId", call_id}, {"reason", reason}}));
    }
    self->MaybeEndDrain();
  });
}

void TabSession::PostDisplace(std::string reason) {
  GatheredPosts::Post(socket_.get_executor(), [self = shared_from_this(), reason = std::move(reason)] {
    if (self->phase_ == State::kClosing) {
      return;
    }
    // The router has already moved the account to the newer tab, and failed
    // this one's calls toward their agents: the tab stops working on them.
    self->announced_ = false;
    self->CancelAll("another tab switched the agent on");
    self->Send(EncodeNotification("relay/displaced", {{"reason", reason}}));
    self->CloseWith(kCloseDisplaced, "displaced by another tab");
  });
}

void TabSession::PostLinkDown(size_t shard) {
  GatheredPosts::Post(socket_.get_executor(), [self = shared_from_this(), shard] {
    if (self->announced_ && self->shard() == shard) {
      // The router failed these calls toward their agents, or is gone: the
      // agents will try again, so the tab must not go on with the first run.
      self->CancelAll("the relay lost its link to the editor's gateway; the agent may try again");
      self->MaybeEndDrain();
    }
  });
}

void TabSession::Reannounce(size_t shard) {
  if (announced_ && phase_ != State::kClosing && this->shard() == shard) {
    Announce();
  }
}

void TabSession::PostGoingAway() {
  GatheredPosts::Post(socket_.get_executor(), [self = shared_from_this()] {
    // The calls it still has are given up (their agents hear it from the
    // router when the tab goes): the tab may stop working on them.
    self->CancelAll("the relay is shutting down");
    self->CloseWith(kCloseGoingAway, "relay shutting down");
  });
}

void TabSession::PostSignedOut(std::string user) {
  GatheredPosts::Post(socket_.get_executor(), [self = shared_from_this(), user = std::move(user)] {
    if (self->phase_ == State::kClosing || self->phase_ == State::kAwaitingHello ||
        self->announcement_.account != user) {
      return;
    }
    self->CancelAll("the account's sign-in ended");
    self->CloseWith(kCloseSignedOut, "the account's sign-in ended; sign in again");
  });
}

}  // namespace relay::gateway
