#include "gateway/net/gateway_state.h"

#include "gateway/net/agent/agent_stream.h"
#include "gateway/net/registry.h"

#include "absl/strings/string_view.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

#include <algorithm>

namespace relay::gateway {

std::string GatewayState::RenderMetrics() const {
  common::MetricsText text;
  text.Add("relay_gateway_http_requests_total", "HTTP requests on the MCP path.", "counter",
           metrics.http_requests.value());
  text.Add("relay_gateway_auth_refusals_total", "Agent requests refused by authentication.",
           "counter", metrics.unauthorized.value(), "reason=\"invalid\"");
  text.Add("relay_gateway_auth_refusals_total", "", "counter", metrics.locked_out.value(),
           "reason=\"locked_out\"");
  text.Add("relay_gateway_auth_refusals_total", "", "counter", metrics.auth_unavailable.value(),
           "reason=\"unavailable\"");
  text.Add("relay_gateway_connections", "Open HTTP and tab connections.", "gauge",
           static_cast<double>(connections.load()));
  {
    int64_t tabs_open = static_cast<int64_t>(metrics.tabs_connected.value() -
                                             metrics.tabs_disconnected.value());
    int64_t streams_open = static_cast<int64_t>(streams->size());
    text.Add("relay_gateway_connections_by_kind", "Open connections by what they carry.",
             "gauge", static_cast<double>(tabs_open), "kind=\"tab\"");
    text.Add("relay_gateway_connections_by_kind", "", "gauge",
             static_cast<double>(streams_open), "kind=\"agent_stream\"");
    text.Add("relay_gateway_connections_by_kind", "", "gauge",
             static_cast<double>(std::max<int64_t>(0, connections.load() - tabs_open - streams_open)),
             "kind=\"agent_http\"");
  }
  for (size_t i = 0; i < kMcpMethodLabelCount; ++i) {
    text.Add("relay_gateway_mcp_messages_total", "JSON-RPC messages from agents, by method.",
             "counter", metrics.mcp_messages[i].value(),
             absl::StrCat("method=\"", kMcpMethodLabels[i], "\""));
  }
  for (size_t i = 0; i < GatewayMetrics::kResponseCodeCount; ++i) {
    int code = GatewayMetrics::kResponseCodes[i];
    text.Add("relay_gateway_http_responses_total",
             "Responses on the MCP path, by status (SSE streams count as 200).", "counter",
             metrics.responses[i].value(),
             absl::StrCat("code=\"", code == 0 ? std::string("other") : absl::StrCat(code), "\""));
  }
  text.Add("relay_gateway_router_link_downs_total",
           "Times a router shard's link ended; the gateway reconnects and re-announces.",
           "counter", metrics.router_link_downs.value());
  text.Add("relay_gateway_connections_refused_total",
           "Connections refused at once because --max_connections were open: answered 503, or "
           "closed unanswered while 128 such answers were under way.",
           "counter", metrics.connections_refused.value());
  text.Add("relay_gateway_accept_errors_total",
           "Failed accepts (out of file descriptors, ...); the listener backs off.", "counter",
           metrics.accept_errors.value());
  text.Add("relay_gateway_request_timeouts_total",
           "Connections closed without an answer because a request did not begin (on a new "
           "connection) or its header did not arrive within --header_timeout, or its body "
           "within that and a second per 16 KiB.",
           "counter", metrics.request_timeouts.value());
  text.Add("relay_gateway_revocations_total",
           "Revocations authsvc pushed to this gateway (a token's, or a user's whose sign-in "
           "ended); each ends what is open with it.",
           "counter", metrics.revocations.value());
  text.Add("relay_gateway_forwards_total", "Agent requests forwarded to a tab.", "counter",
           metrics.forwards.value());
  for (size_t i = 0; i < ForwardOutcome::kKinds; ++i) {
    text.Add("relay_gateway_forward_outcomes_total", "How forwarded requests ended.", "counter",
             metrics.forward_outcomes[i].value(),
             std::string("outcome=\"") +
                 ForwardOutcome::Name(static_cast<ForwardOutcome::Kind>(i)) + "\"");
  }
  text.AddHistogram("relay_gateway_forward_duration_seconds",
                    "Forwarded requests, from the agent's request to its answer.",
                    metrics.forward_seconds);
  text.Add("relay_gateway_tabs",
           "Tabs connected to this gateway.", "gauge",
           static_cast<double>(metrics.tabs_connected.value() - metrics.tabs_disconnected.value()));
  text.Add("relay_gateway_tab_resumes_total",
           "Tab hellos with a resume credential instead of a ticket, by outcome.", "counter",
           metrics.tabs_resumed.value(), "outcome=\"accepted\"");
  text.Add("relay_gateway_tab_resumes_total",
           "Tab hellos with a resume credential instead of a ticket, by outcome.", "counter",
           metrics.tab_resumes_refused.value(), "outcome=\"refused\"");
  text.Add("relay_gateway_router_shards_up", "Router shards with a live link.", "gauge",
           router->ShardsUp());
  text.Add("relay_gateway_calls_in_flight", "Calls of this gateway's agents waiting for a tab.",
           "gauge", router->CallsInFlight());
  text.Add("relay_gateway_draining", "1 while the gateway drains after SIGTERM.", "gauge",
           draining.load() ? 1 : 0);
  return text.str();
}

GatewayState::OperatorAnswer GatewayState::AnswerOperator(absl::string_view path) const {
  if (path == "/metrics") {
    return {200, "text/plain; version=0.0.4", RenderMetrics()};
  }
  if (path == "/readyz" && draining.load()) {
    return {503, "text/plain", "not ready: shutting down\n"};
  }
  if (path == "/readyz" && router->ShardsUp() == 0) {
    return {503, "text/plain", "not ready: no router shard is reachable\n"};
  }
  return {200, "text/plain", "ok\n"};
}

void GatewayState::Wire() {
  tab_services.emplace(TabServices{options, gateway_id, *auth, *resumes, *signed_out, *router,
                                   *tabs, metrics, draining});
  stream_services.emplace(
      StreamServices{options, *router, *streams, *ended, *revocations, metrics});
}

}  // namespace relay::gateway
