#include "router/rpc/admin_service.h"

#include "absl/time/clock.h"
#include "common/async_unary.h"
#include "common/log.h"

namespace relay::router {

using Service = relay::v1::RouterAdmin::AsyncService;

void RouterAdminService::Serve(common::CqLoop& loop) {
  common::ServeUnary(
      loop, &service_, &Service::RequestListTabs, common::kRoleOperator,
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
      [this](const relay::v1::GetStatsRequest&, relay::v1::GetStatsResponse* response) {
        hub_.Read([&](const RouterCore& core) {
          const RouterCounts& c = core.counts();
          response->set_links(core.LinkCount());
          response->set_tabs(core.tabs().List("").size());
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
      [this](const relay::v1::EndSessionRequest& request, relay::v1::EndSessionResponse*) {
        hub_.EndSession(request.session_id());
        return grpc::Status::OK;
      });
}

}  // namespace relay::router
