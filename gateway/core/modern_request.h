#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/string_view.h"
#include "gateway/core/jsonrpc.h"

namespace relay::gateway {

// MCP 2026-07-28 (the "modern" era): stateless requests that carry their
// protocol version, client capabilities and options in params._meta, with the
// method and name mirrored in headers. This file tells the eras apart and
// checks a modern request's envelope once, so that the dispatcher works from
// what it found (MCP-SURFACE.md "Transport, 2026-07-28 era").

inline constexpr absl::string_view kModernVersion = "2026-07-28";
inline constexpr absl::string_view kMetaProtocolVersion = "io.modelcontextprotocol/protocolVersion";
inline constexpr absl::string_view kMetaClientCapabilities =
    "io.modelcontextprotocol/clientCapabilities";
inline constexpr absl::string_view kMetaClientInfo = "io.modelcontextprotocol/clientInfo";
inline constexpr absl::string_view kMetaLogLevel = "io.modelcontextprotocol/logLevel";
inline constexpr absl::string_view kMetaServerInfo = "io.modelcontextprotocol/serverInfo";
inline constexpr absl::string_view kMetaSubscriptionId = "io.modelcontextprotocol/subscriptionId";

// The modern era's own JSON-RPC errors.
inline constexpr int kHeaderMismatch = -32020;
inline constexpr int kMissingClientCapability = -32021;
inline constexpr int kUnsupportedVersion = -32022;

// The headers a modern request mirrors its body in.
struct ModernHeaders {
  std::optional<std::string> protocol_version;  // MCP-Protocol-Version
  std::optional<std::string> method;            // Mcp-Method
  std::optional<std::string> name;              // Mcp-Name (maybe =?base64?...?=)
};

// What the agent declared it can answer (clientCapabilities), which decides
// what a tab may ask it through a multi round-trip request.
struct ClientCapabilities {
  bool elicitation = false;
  bool sampling = false;
  bool roots = false;
};

// A modern request whose envelope passed the checks.
struct ModernRequest {
  std::string version;
  ClientCapabilities capabilities;
  // The RFC 5424 rank (0 debug .. 7 emergency) from which log messages of the
  // call reach the agent; -1 when the request set none (then none do).
  int log_rank = -1;
};

// Why a modern request is refused, ready to be answered.
struct ModernRefusal {
  int status = 400;
  int code = kInvalidParams;
  std::string message;
  nlohmann::json data;  // null when none
};

// Whether a request belongs to the 2026-07-28 era: its _meta names a protocol
// version or client capabilities, the version header names a version that is
// not of the 2025 era, or the method exists only in the modern era.
// initialize without those, and everything else, is of the 2025 era.
bool IsModern(const std::optional<std::string>& version_header, const RpcMessage& message);

// The versions served, newest first: the modern one and the 2025 revisions.
const std::vector<std::string>& SupportedVersions();

// Checks the envelope of a modern request, in the order the specification's
// errors need: _meta and its required keys (-32602), the version header
// against _meta (-32020), the version itself (-32022), Mcp-Method and, for
// tools/call, resources/read and prompts/get, Mcp-Name against the body
// (-32020). Every refusal is HTTP 400.
std::variant<ModernRequest, ModernRefusal> CheckModern(const ModernHeaders& headers,
                                                       const RpcMessage& message);

// The RFC 5424 rank of a level name, or -1.
int LogRank(absl::string_view level);

// A modern result: result's JSON object with "resultType":"complete" added
// when it has none, and extra members (JSON text without braces, e.g.
// "ttlMs":0) appended. A result that is not an object is returned as it is.
std::string CompleteResult(absl::string_view result, absl::string_view extra = {});

}  // namespace relay::gateway
