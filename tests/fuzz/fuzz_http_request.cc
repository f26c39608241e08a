// The gateway's HTTP request handling fed raw bytes: Beast's parser with the gateway's
// limits (16 KiB of header, 4 MiB of body), then the MCP dispatcher on what it parsed.
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <memory>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "gateway/core/catalogue.h"
#include "gateway/core/mcp_dispatcher.h"
#include "gateway/core/session_id.h"
#include "gateway/core/session_state.h"

namespace {

namespace http = boost::beast::http;
using namespace relay::gateway;

struct World {
  World() : signer(std::string(32, 'k')) {
    std::string path = "/tmp/relay-fuzz-catalogue-http.json";
    std::ofstream(path) << R"({"tools":[{"name":"get_view"}]})";
    catalogue = *CatalogueFile::Open(path);
    dispatcher = std::make_unique<McpDispatcher>(signer, *catalogue, ended, DispatchOptions{});
  }
  SessionIdSigner signer;
  std::unique_ptr<CatalogueFile> catalogue;
  EndedSessions ended;
  std::unique_ptr<McpDispatcher> dispatcher;
};

std::optional<std::string> Field(const http::request<http::string_body>& req,
                                 absl::string_view name) {
  auto it = req.find(boost::beast::string_view(name.data(), name.size()));
  if (it == req.end()) {
    return std::nullopt;
  }
  return std::string(it->value());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World world;
  http::request_parser<http::string_body> parser;
  parser.header_limit(16 * 1024);
  parser.body_limit(4 * 1024 * 1024);
  parser.eager(true);
  boost::beast::error_code ec;
  boost::asio::const_buffer input(data, size);
  size_t used = parser.put(input, ec);
  if (ec && ec != http::error::need_more) {
    return 0;
  }
  if (!ec && !parser.is_done() && used < size) {
    parser.put(boost::asio::const_buffer(data + used, size - used), ec);
  }
  if (!parser.is_header_done()) {
    return 0;
  }
  const auto& req = parser.get();
  AgentHeaders headers;
  headers.session_id = Field(req, "mcp-session-id");
  headers.protocol_version = Field(req, "mcp-protocol-version");
  auto accept = Field(req, "accept");
  headers.accepts_sse = accept && accept->find("text/event-stream") != std::string::npos;
  if (parser.is_done() && req.method() == http::verb::post) {
    world.dispatcher->HandlePost("alice", headers, req.body());
  }
  return 0;
}
