#include "gateway/core/modern_request.h"

#include <array>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "gateway/core/json_scan.h"

namespace relay::gateway {
namespace {

constexpr std::array<absl::string_view, 8> kLevels = {
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"};

// params._meta, when it is an object: the one part of the params read here,
// member by member from its text (it is read for every 2026-07-28 request).
LazyJson Meta(const RpcMessage& message) { return message.params.ObjectOf("_meta"); }

ModernRefusal Refusal(int code, std::string message, nlohmann::json data = nullptr) {
  return ModernRefusal{400, code, std::move(message), std::move(data)};
}

// Mcp-Name's value as the client meant it: "=?base64?...?=" is decoded.
std::optional<std::string> DecodeHeaderValue(absl::string_view value) {
  if (absl::StartsWith(value, "=?base64?") && absl::EndsWith(value, "?=") && value.size() >= 11) {
    std::string decoded;
    if (!absl::Base64Unescape(value.substr(9, value.size() - 11), &decoded)) {
      return std::nullopt;
    }
    return decoded;
  }
  return std::string(value);
}

// The name the body gives for the headers to mirror, for the methods that
// have one.
std::optional<std::string> BodyName(const RpcMessage& message) {
  if (message.method == "tools/call" || message.method == "prompts/get") {
    return message.params.StringOf("name");
  }
  if (message.method == "resources/read") {
    return message.params.StringOf("uri");
  }
  return std::nullopt;
}

// Declared: present, and neither null nor false.
bool Declares(const LazyJson& capabilities, const char* name) {
  std::optional<char> kind = capabilities.KindOf(name);
  return kind && *kind != 'n' && *kind != 'f';
}

}  // namespace

const std::vector<std::string>& SupportedVersions() {
  static const std::vector<std::string> kAll = {std::string(kModernVersion), "2025-11-25",
                                                "2025-06-18", "2025-03-26"};
  return kAll;
}

int LogRank(absl::string_view level) {
  for (size_t i = 0; i < kLevels.size(); ++i) {
    if (kLevels[i] == level) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

bool IsModern(const std::optional<std::string>& version_header, const RpcMessage& message) {
  if (version_header && *version_header == kModernVersion) {
    return true;
  }
  if (message.method == "server/discover" || message.method == "subscriptions/listen") {
    return true;
  }
  LazyJson meta = Meta(message);
  return meta.KindOf(kMetaProtocolVersion) || meta.KindOf(kMetaClientCapabilities) ||
         meta.KindOf(kMetaClientInfo);
}

std::variant<ModernRequest, ModernRefusal> CheckModern(const ModernHeaders& headers,
                                                       const RpcMessage& message) {
  LazyJson meta = Meta(message);
  if (!meta.present()) {
    return Refusal(kInvalidParams,
                   absl::StrCat("Invalid params: a ", kModernVersion,
                                " request carries params._meta with ", kMetaProtocolVersion,
                                " and ", kMetaClientCapabilities));
  }
  std::optional<std::string> version = meta.StringOf(kMetaProtocolVersion);
  if (!version) {
    return Refusal(kInvalidParams,
                   absl::StrCat("Invalid params: params._meta must name ", kMetaProtocolVersion));
  }
  LazyJson capabilities = meta.ObjectOf(kMetaClientCapabilities);
  if (!capabilities.present()) {
    return Refusal(kInvalidParams, absl::StrCat("Invalid params: params._meta must carry ",
                                                kMetaClientCapabilities, " (an object)"));
  }
  const std::string& asked = *version;
  if (!headers.protocol_version) {
    return Refusal(kHeaderMismatch,
                   "Header mismatch: the MCP-Protocol-Version header is required");
  }
  if (*headers.protocol_version != asked) {
    return Refusal(kHeaderMismatch,
                   absl::StrCat("Header mismatch: MCP-Protocol-Version header value '",
                                *headers.protocol_version, "' does not match body value '",
                                asked, "'"));
  }
  if (asked != kModernVersion) {
    nlohmann::json data = {{"supported", SupportedVersions()}, {"requested", asked}};
    return Refusal(kUnsupportedVersion,
                   absl::StrCat("Unsupported protocol version '", asked, "'; supported: ",
                                kModernVersion, " (and, with initialize, the 2025 revisions)"),
                   std::move(data));
  }
  if (!headers.method) {
    return Refusal(kHeaderMismatch, "Header mismatch: the Mcp-Method header is required");
  }
  if (*headers.method != message.method) {
    return Refusal(kHeaderMismatch,
                   absl::StrCat("Header mismatch: Mcp-Method header value '", *headers.method,
                                "' does not match body value '", message.method, "'"));
  }
  if (std::optional<std::string> body_name = BodyName(message)) {
    if (!headers.name) {
      return Refusal(kHeaderMismatch, absl::StrCat("Header mismatch: the Mcp-Name header is "
                                                   "required for ", message.method));
    }
    std::optional<std::string> decoded = DecodeHeaderValue(*headers.name);
    if (!decoded || *decoded != *body_name) {
      return Refusal(kHeaderMismatch,
                     absl::StrCat("Header mismatch: Mcp-Name header value '", *headers.name,
                                  "' does not match the body's"));
    }
  }
  ModernRequest request;
  request.version = asked;
  request.capabilities.elicitation = Declares(capabilities, "elicitation");
  request.capabilities.sampling = Declares(capabilities, "sampling");
  request.capabilities.roots = Declares(capabilities, "roots");
  if (std::optional<std::string> level = meta.StringOf(kMetaLogLevel)) {
    request.log_rank = LogRank(*level);
    if (request.log_rank < 0) {
      return Refusal(kInvalidParams, absl::StrCat("Invalid params: ", kMetaLogLevel,
                                                  " must be an RFC 5424 level name"));
    }
  }
  return request;
}

std::string CompleteResult(absl::string_view result, absl::string_view extra) {
  absl::string_view body = absl::StripAsciiWhitespace(result);
  if (body.size() < 2 || body.front() != '{' || body.back() != '}') {
    return std::string(result);
  }
  // The tab's own bytes: its keys may be spelt with escapes.
  bool has_type = false;
  for (const JsonMember& member : ScanJson(body).members) {
    has_type = has_type || member.key == "resultType";
  }
  absl::string_view inner = absl::StripAsciiWhitespace(body.substr(1, body.size() - 2));
  std::string out = absl::StrCat("{", inner);
  auto add = [&out, empty = inner.empty()](absl::string_view member) mutable {
    if (member.empty()) {
      return;
    }
    absl::StrAppend(&out, empty ? "" : ",", member);
    empty = false;
  };
  add(has_type ? "" : R"("resultType":"complete")");
  add(extra);
  out.push_back('}');
  return out;
}

}  // namespace relay::gateway
