#include "gateway/core/router_events.h"

#include <string>
#include <utility>

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
                                        absl::string_view session, uint64_t last_event_id,
                                        bool confirm) {
  relay::v1::GatewayEvent event;
  auto* open = event.mutable_stream_open();
  open->set_stream_id(stream_id);
  open->set_session_id(std::string(session));
  open->set_account(std::string(account));
  open->set_last_event_id(last_event_id);
  open->set_confirm(confirm);
  return event;
}

relay::v1::GatewayEvent StreamCloseEvent(uint64_t stream_id, absl::string_view session) {
  relay::v1::GatewayEvent event;
  event.mutable_stream_close()->set_stream_id(stream_id);
  event.mutable_stream_close()->set_session_id(std::string(session));
  return event;
}

relay::v1::GatewayEvent TabUpEvent(uint64_t tab_id, const TabAnnouncement& tab) {
  relay::v1::GatewayEvent event;
  auto* up = event.mutable_tab_up();
  up->set_tab_id(tab_id);
  up->set_account(tab.account);
  up->set_role(tab.role);
  up->set_client_name(tab.client_name);
  up->set_client_version(tab.client_version);
  up->set_generation(tab.generation);
  up->set_resumed_at(tab.resumed_at);
  up->set_live(tab.live);
  return event;
}

relay::v1::GatewayEvent TabDownEvent(uint64_t tab_id) {
  relay::v1::GatewayEvent event;
  event.mutable_tab_down()->set_tab_id(tab_id);
  return event;
}

void TabReplyInto(relay::v1::GatewayEvent& event, uint64_t tab_id, uint64_t call_id,
                  bool is_error, std::string payload) {
  auto* reply = event.mutable_tab_reply();
  reply->set_tab_id(tab_id);
  reply->set_call_id(call_id);
  reply->set_is_error(is_error);
  reply->set_payload(std::move(payload));
}

relay::v1::GatewayEvent TabNotificationEvent(uint64_t tab_id, TabNotice notice) {
  relay::v1::GatewayEvent event;
  auto* note = event.mutable_tab_notification();
  note->set_tab_id(tab_id);
  note->set_method(std::move(notice.method));
  note->set_uri(std::move(notice.uri));
  note->set_level(std::move(notice.level));
  note->set_progress_token(std::move(notice.progress_token));
  note->set_line(std::move(notice.line));
  note->set_call_id(notice.call_id);
  note->set_params(std::move(notice.params));
  return event;
}

relay::v1::GatewayEvent TabRequestEvent(uint64_t tab_id, AgentRequest request) {
  relay::v1::GatewayEvent event;
  auto* out = event.mutable_tab_request();
  out->set_tab_id(tab_id);
  out->set_call_id(request.call_id);
  out->set_message(std::move(request.message));
  out->set_tab_request_id(std::move(request.tab_request_id));
  return event;
}

}  // namespace relay::gateway
