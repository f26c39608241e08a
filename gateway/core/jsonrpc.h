#pragma once

#include "absl/strings/string_view.h"
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "gateway/core/lazy_json.h"
#include "nlohmann/json.hpp"

namespace relay::gateway {

// JSON-RPC 2.0 error codes used by the relay.
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kResourceNotFound = -32002;  // MCP: resources/read of an unknown URI
inline constexpr int kInternalError = -32603;
inline constexpr int kNoTab = -32002;  // MCP-SURFACE.md: forwarded method, no tab

// One decoded JSON-RPC message. For requests and responses id is a string or
// a number (0 included); for notifications it is null.
struct RpcMessage {
  enum class Kind { kRequest, kNotification, kResponse };
  Kind kind = Kind::kRequest;
  nlohmann::json id;
  std::string method;
  LazyJson params;  // object or array, as the peer wrote it; or absent
  bool is_error = false;  // responses: true when "error", false when "result"
  std::string payload;     // responses: the text of the "result" or "error" member
};

// Why a text is not a usable JSON-RPC message, ready to be answered.
struct RpcFailure {
  int code = kInvalidRequest;
  std::string message;
  nlohmann::json id;  // the request's id when it could be read, else null
  bool too_deep = false;  // refused for nesting deeper than the limit (TooDeep)
};

// How deep a peer's JSON may nest (ARCHITECTURE.md "Limits", --max_json_depth).
inline constexpr int kDefaultMaxJsonDepth = 100;

// Whether text nests arrays and objects deeper than max_depth. One linear scan
// with no recursion (strings skipped properly): it runs before anything
// recursive (dump, copies) can see a peer's text.
bool NestsDeeperThan(absl::string_view text, int max_depth);

// The top-level "id" of a JSON object text, read without building the value
// (an iterative SAX pass), so that a message refused for its depth can still be
// answered; null when there is none.
nlohmann::json TopLevelId(absl::string_view text);

// Decodes one message (not a batch). Never throws: malformed JSON, or JSON
// nested deeper than max_depth, gives kParseError, a well-formed non-message
// kInvalidRequest.
std::variant<RpcMessage, RpcFailure> DecodeMessage(absl::string_view text,
                                                   int max_depth = kDefaultMaxJsonDepth);

// The failure DecodeMessage gives for a message nested too deep.
RpcFailure TooDeep(absl::string_view text, int max_depth);

// Decodes an already parsed value as one message (used for batch items too).
std::variant<RpcMessage, RpcFailure> DecodeValue(nlohmann::json value);

// Encoders. Raw arguments are JSON texts spliced in as they are, which is how
// the relay passes a tab's answer on without parsing it again.
std::string EncodeResult(const nlohmann::json& id, absl::string_view raw_result);
std::string EncodeRawError(const nlohmann::json& id, absl::string_view raw_error);
std::string EncodeError(const nlohmann::json& id, int code, absl::string_view message);
// The error object alone ({"code":…,"message":…}), for answers the relay
// gives in a peer's place (a tab's to an agent, an agent's to a tab).
std::string EncodeErrorObject(int code, absl::string_view message);
// -32002 for a resource the agent may not see, worded as MCP's example and the
// reference editor word an unknown one (message "Resource not found", data
// {uri}), so that an agent cannot tell the hidden from the absent.
std::string EncodeResourceNotFound(const nlohmann::json& id, absl::string_view uri);
std::string EncodeRequest(uint64_t id, absl::string_view method, absl::string_view raw_params);
std::string EncodeNotification(absl::string_view method, const nlohmann::json& params);

// dump() that never throws on invalid UTF-8 from a peer.
std::string DumpJson(const nlohmann::json& value);

}  // namespace relay::gateway
