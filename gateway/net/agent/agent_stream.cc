#include "gateway/net/agent/agent_stream.h"

#include <array>

#include <boost/asio/post.hpp>

#include "absl/time/time.h"
#include "gateway/core/router_events.h"
#include "gateway/core/session_state.h"
#include "gateway/net/gathered_posts.h"
#include "gateway/net/registry.h"

namespace relay::gateway {

namespace asio = boost::asio;

AgentStream::AgentStream(asio::ip::tcp::socket&& socket, const StreamServices& services,
                         ConnectionSlot slot, std::string account, std::string role,
                         std::string session, std::string token_sha256,
                         std::optional<ListenFilter> listen)
    : socket_(std::move(socket)), services_(services), slot_(std::move(slot)),
      account_(std::move(account)), shard_(services.router.ShardOf(account_)),
      role_(std::move(role)), session_(std::move(session)),
      token_sha256_(std::move(token_sha256)), listen_(std::move(listen)),
      out_(socket_, *this, absl::ToChronoMilliseconds(services.options.sse_keepalive),
           MaxQueuedBytes(services.options),
           absl::ToChronoMilliseconds(services.options.idle_timeout),
           absl::ToChronoMilliseconds(services.options.idle_timeout)) {}

void AgentStream::Run(uint64_t last_event_id, uint64_t revocation_mark) {
  services_.router.Send(account_, SessionTouchEvent(account_, session_));
  stream_id_ = services_.streams.Add(weak_from_this(), shard_, RegistryKey(session_));
  services_.metrics.CountResponse(200);
  // A stream is the connection's last response: whatever ends it, the gateway closes the
  // connection after the last chunk. Said in the head, so that a proxy with a keep-alive pool
  // (nginx) does not put the connection back and send the next request on it as it closes
  // (the request would fail "upstream prematurely closed", and a POST is not retried).
  out_.StartSse("Connection: close\r\n");
  // A listen stream is acknowledged when the router confirms it (PostOpened), not now: its
  // subscriptions and the stream travel to the router on the link while a tab's news may
  // reach the router from another gateway first, and an agent that heard the
  // acknowledgement would miss what its tab sent next.
  AnnounceSubscriptions();
  services_.router.Send(account_, StreamOpenEvent(stream_id_, account_, session_, last_event_id,
                                                /*confirm=*/listen_.has_value()));
  WatchPeer();
  // Registered above, so a revocation pushed from now on finds this stream; one pushed while
  // its verdict was on its way from authsvc did not, and is found here instead. It ends the
  // stream as it would have ended it open (docs/decisions.md, "A revocation reaches what its
  // verdict was on the way for").
  if (services_.revocations.Since(revocation_mark, account_, token_sha256_)) {
    End("the token was revoked: sign in again");
  }
}

void AgentStream::WatchPeer() {
  // Waits for the socket to be readable rather than reading into a buffer: an idle stream
  // holds no read buffer (tens of thousands of streams per gateway).
  socket_.async_wait(
      asio::ip::tcp::socket::wait_read, [self = shared_from_this()](boost::system::error_code ec) {
        if (self->closing_) {
          // The last chunk is out and this wait was cancelled to close.
          return CloseLingering(self->socket_, self);
        }
        if (self->ended_) {
          return;
        }
        if (!ec) {
          // A request on a stream is never answered: what the agent sends is dropped.
          std::array<char, 1024> dropped;
          self->socket_.non_blocking(true, ec);
          if (!ec) {
            self->socket_.read_some(asio::buffer(dropped), ec);
          }
          if (!ec || ec == asio::error::would_block || ec == asio::error::try_again) {
            return self->WatchPeer();
          }
        }
        // The agent went away (end of stream or an error): so does the stream.
        self->Unregister();
        self->ended_ = true;
        self->ending_ = true;
        self->out_.Stop();
        boost::system::error_code ignored;
        self->socket_.close(ignored);
      });
}

void AgentStream::AnnounceSubscriptions() {
  if (!listen_) {
    return;
  }
  for (const std::string& uri : listen_->uris()) {
    SessionEffect subscribe;
    subscribe.kind = SessionEffect::Kind::kSubscribe;
    subscribe.value = uri;
    if (auto event = EffectEvent(account_, session_, subscribe)) {
      services_.router.Send(account_, *std::move(event));
    }
  }
}

void AgentStream::PostEvent(uint64_t event_id, std::string message) {
  GatheredPosts::Post(socket_.get_executor(), [self = shared_from_this(), event_id,
                                               message = std::move(message)] {
    if (self->ending_) {
      return;
    }
    if (!self->listen_) {
      return self->out_.SendEvent(message, event_id);
    }
    if (!self->acknowledged_) {
      return;  // the agent is not told it listens yet (a catalogue change meanwhile)
    }
    // Listen streams are not resumable: no event ids.
    if (auto passed = self->listen_->Pass(message)) {
      self->out_.SendEvent(*passed);
    }
  });
}

void AgentStream::PostOpened() {
  GatheredPosts::Post(socket_.get_executor(), [self = shared_from_this()] {
    if (self->ending_ || !self->listen_ || self->acknowledged_) {
      return;
    }
    self->acknowledged_ = true;
    self->out_.SendEvent(self->listen_->Acknowledged());
  });
}

void AgentStream::PostNotice(std::string message) {
  PostEvent(0, std::move(message));
}

void AgentStream::Reannounce(size_t shard) {
  if (!ending_ && stream_id_ != 0 && !services_.ended.Contains(session_) && shard_ == shard) {
    AnnounceSubscriptions();
    services_.router.Send(account_,
                          StreamOpenEvent(stream_id_, account_, session_, 0,
                                          /*confirm=*/listen_.has_value() && !acknowledged_));
  }
}

void AgentStream::PostSessionEnded(std::string session) {
  GatheredPosts::Post(socket_.get_executor(),
                      [self = shared_from_this(), session = std::move(session)] {
    if (self->session_ == session) {
      self->End();
    }
  });
}

void AgentStream::PostEnd(std::string reason) {
  GatheredPosts::Post(socket_.get_executor(),
                      [self = shared_from_this(), reason = std::move(reason)] { self->End(reason); });
}

void AgentStream::PostRevoked(const Revocation& revoked) {
  if (revoked.user != account_ &&
      (revoked.token_sha256.empty() || revoked.token_sha256 != token_sha256_)) {
    return;  // another's: not even a post (every stream hears every revocation)
  }
  GatheredPosts::Post(socket_.get_executor(), [self = shared_from_this()] {
    self->End("the token was revoked: sign in again");
  });
}

void AgentStream::End(absl::string_view reason) {
  if (ending_) {
    return;  // the last chunk is queued already: nothing may follow it
  }
  ending_ = true;
  Unregister();
  if (listen_) {
    // A clean end is the listen request's result; a cut one its error.
    out_.SendEvent(reason.empty() ? listen_->Closed() : listen_->Failed(reason));
  }
  out_.EndSse(/*keep_alive=*/false);  // OnResponseWritten closes
}

void AgentStream::OnResponseWritten(AfterResponse) {
  out_.Stop();  // its write watch holds this stream: let go of it now
  // The peer watch holds the read side: stop it, then close (in its handler).
  ended_ = true;
  closing_ = true;
  boost::system::error_code ignored;
  socket_.cancel(ignored);
}

void AgentStream::OnWriteFailed() {
  ended_ = true;
  ending_ = true;
  Unregister();
}

void AgentStream::Unregister() {
  if (stream_id_ == 0) {
    return;
  }
  services_.streams.Remove(stream_id_);
  services_.router.Send(account_, StreamCloseEvent(stream_id_, session_));
  stream_id_ = 0;
}

}  // namespace relay::gateway
