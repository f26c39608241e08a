#include "gateway/core/session_events.h"

#include <string>

namespace relay::gateway {

std::optional<relay::v1::GatewayEvent> EffectEvent(absl::string_view account,
                                                   absl::string_view session,
                                                   const SessionEffect& effect) {
  relay::v1::GatewayEvent event;
  switch (effect.kind) {
    case SessionEffect::Kind::kNone:
      return std::nullopt;
    case SessionEffect::Kind::kSubscribe:
    case SessionEffect::Kind::kUnsubscribe: {
      auto* sub = event.mutable_session_subscribe();
      sub->set_session_id(std::string(session));
      sub->set_account(std::string(account));
      sub->set_uri(effect.value);
      sub->set_subscribe(effect.kind == SessionEffect::Kind::kSubscribe);
      break;
    }
    case SessionEffect::Kind::kLogLevel: {
      auto* level = event.mutable_session_log_level();
      level->set_session_id(std::string(session));
      level->set_account(std::string(account));
      level->set_level(effect.value);
      break;
    }
    case SessionEffect::Kind::kAgentReply: {
      auto* reply = event.mutable_agent_reply();
      reply->set_account(std::string(account));
      reply->set_session_id(std::string(session));
      reply->set_call_id(effect.call_id);
      reply->set_tab_request_id(effect.tab_request_id);
      reply->set_is_error(effect.is_error);
      reply->set_payload(effect.payload);
      break;
    }
    case SessionEffect::Kind::kAgentCancel: {
      auto* cancel = event.mutable_agent_cancel();
      cancel->set_account(std::string(account));
      cancel->set_session_id(std::string(session));
      cancel->set_request_id(effect.value);
      cancel->set_reason(effect.reason);
      break;
    }
  }
  return event;
}

relay::v1::GatewayEvent SessionTouchEvent(absl::string_view account, absl::string_view session) {
  relay::v1::GatewayEvent event;
  event.mutable_session_touch()->set_session_id(std::string(session));
  event.mutable_session_touch()->set_account(std::string(account));
  return event;
}

relay::v1::GatewayEvent SessionEndEvent(absl::string_view account, absl::string_view session) {
  relay::v1::GatewayEvent event;
  event.mutable_session_end()->set_session_id(std::string(session));
  event.mutable_session_end()->set_account(std::string(account));
  return event;
}

relay::v1::GatewayEvent StreamOpenEvent(uint64_t stream_id, absl::string_view account,
                                        absl::string_view session, uint64_t last_event_id) {
  relay::v1::GatewayEvent event;
  auto* open = event.mutable_stream_open();
  open->set_stream_id(stream_id);
  open->set_session_id(std::string(session));
  open->set_account(std::string(account));
  open->set_last_event_id(last_event_id);
  return event;
}

relay::v1::GatewayEvent StreamCloseEvent(uint64_t stream_id, absl::string_view session) {
  relay::v1::GatewayEvent event;
  event.mutable_stream_close()->set_stream_id(stream_id);
  event.mutable_stream_close()->set_session_id(std::string(session));
  return event;
}

}  // namespace relay::gateway
