// The MCP dispatcher on any POST body with any of the headers it reads, and on any answer
// a tab may give (FinishForward, AgentEvent, RefuseTabRequest).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>

#include "gateway/core/catalogue.h"
#include "gateway/core/mcp_dispatcher.h"
#include "gateway/core/session_id.h"
#include "gateway/core/session_state.h"

namespace {

using namespace relay::gateway;

struct World {
  World() : signer(std::string(32, 'k')) {
    std::string path = "/tmp/relay-fuzz-catalogue.json";
    std::ofstream(path) << R"({"tools":[{"name":"get_view","description":"d","inputSchema":{"type":"object"}}],)"
                        << R"("resources":[{"uri":"editor://view","name":"view"}],"prompts":[{"name":"p"}]})";
    catalogue = *CatalogueFile::Open(path);
    dispatcher = std::make_unique<McpDispatcher>(signer, *catalogue, ended, DispatchOptions{});
    session = signer.Issue("alice");
  }
  SessionIdSigner signer;
  std::unique_ptr<CatalogueFile> catalogue;
  EndedSessions ended;
  std::unique_ptr<McpDispatcher> dispatcher;
  std::string session;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World world;
  if (size < 1) {
    return 0;
  }
  // The first byte picks the headers; the rest is the body.
  uint8_t pick = data[0];
  absl::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  AgentHeaders headers;
  const char* versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2026-07-28", "x"};
  if (pick & 1) {
    headers.session_id = world.session;
  }
  if (pick & 2) {
    headers.protocol_version = versions[(pick >> 2) % 5];
  }
  headers.accepts_sse = pick & 0x80;
  if (pick & 0x40) {
    // A 2026-07-28 request mirrors its method and name in headers: take them
    // from the body, so that the fuzzer gets past the header checks.
    auto parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_object() && parsed.contains("method") && parsed["method"].is_string()) {
      headers.mcp_method = parsed["method"].get<std::string>();
      const nlohmann::json& params = parsed.contains("params") ? parsed["params"] : parsed;
      for (const char* key : {"name", "uri"}) {
        if (params.is_object() && params.contains(key) && params[key].is_string()) {
          headers.mcp_name = params[key].get<std::string>();
        }
      }
    }
    headers.token_key = "k";
  }
  PostDecision decision = world.dispatcher->HandlePost("alice", headers, body);
  std::vector<const PostDecision*> all{&decision};
  for (const PostDecision& item : decision.batch) {
    all.push_back(&item);
  }
  for (const PostDecision* d : all) {
    if (auto* plan = std::get_if<ForwardPlan>(&d->action)) {
      ForwardOutcome outcome;
      outcome.kind = static_cast<ForwardOutcome::Kind>(pick % ForwardOutcome::kKinds);
      outcome.payload = std::string(body);
      outcome.view_line = "The view changed.";
      world.dispatcher->FinishForward(*plan, outcome);
      world.dispatcher->AgentEvent(*plan, std::string(body));
      if (plan->modern) {
        // The body as a tab's request to the agent in a round, and as an event.
        ForwardPlan copy = *plan;
        world.dispatcher->DecideRound("alice", copy, {RoundRequest{1, "\"k\"", std::string(body)}},
                                      absl::Now());
        world.dispatcher->PassesModern(copy, body);
      }
    }
  }
  world.dispatcher->RefuseTabRequest(body);
  world.dispatcher->HandleGet("alice", headers);
  world.dispatcher->HandleDelete("alice", headers);
  return 0;
}
