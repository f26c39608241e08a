#include "gateway/core/http_framing.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gateway/core/jsonrpc.h"
#include "nlohmann/json.hpp"

namespace relay::gateway {

namespace {

std::string Chunk(absl::string_view data) {
  return absl::StrCat(absl::Hex(data.size()), "\r\n", data, "\r\n");
}

}  // namespace

absl::string_view ReasonPhrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Unknown";
  }
}

std::string EncodeResponse(int status, absl::string_view content_type, absl::string_view body,
                           absl::string_view extra_headers, bool keep_alive,
                           int keep_alive_timeout_s) {
  // Sized once: an answer is one allocation, however its parts add up.
  // Past the parts' own bytes: the status line's, Server's, the names' and
  // the CRLFs (90), the status's and the length's digits (at most 31), and
  // the Keep-Alive hint's (at most 33).
  constexpr size_t kFixedBytes = 160;
  const absl::string_view reason = ReasonPhrase(status);
  std::string out;
  out.reserve(kFixedBytes + reason.size() + extra_headers.size() + content_type.size() +
              body.size());
  absl::StrAppend(&out, "HTTP/1.1 ", status, " ", reason,
                  "\r\nServer: mcp-tab-relay\r\n", extra_headers);
  if (!body.empty()) {
    absl::StrAppend(&out, "Content-Type: ", content_type, "\r\n");
  }
  absl::StrAppend(&out, "Content-Length: ", body.size(), "\r\n");
  if (!keep_alive) {
    out.append("Connection: close\r\n");
  } else if (keep_alive_timeout_s >= 0) {
    absl::StrAppend(&out, "Keep-Alive: timeout=", keep_alive_timeout_s, "\r\n");
  }
  absl::StrAppend(&out, "\r\n", body);
  return out;
}

std::string JsonErrorBody(absl::string_view message) {
  return DumpJson(nlohmann::json{{"error", std::string(message)}});
}

std::string EncodeSseHead(absl::string_view extra_headers) {
  return absl::StrCat("HTTP/1.1 200 OK\r\nServer: mcp-tab-relay\r\n", extra_headers,
                      "Content-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                      "X-Accel-Buffering: no\r\nTransfer-Encoding: chunked\r\n\r\n");
}

std::string EncodeSseEvent(absl::string_view message, uint64_t event_id) {
  std::string event = event_id == 0 ? "" : absl::StrCat("id: ", event_id, "\n");
  absl::StrAppend(&event, "event: message\ndata: ");
  // A line break ends an SSE line. The message is JSON, which holds CR and LF
  // only between its tokens, as white space: each becomes a space, so the
  // event is one data line of the message's own size (a data line per line
  // of a message made of line breaks would be seven times its size).
  const size_t start = event.size();
  absl::StrAppend(&event, message);
  std::replace_if(
      event.begin() + start, event.end(), [](char c) { return c == '\r' || c == '\n'; }, ' ');
  event.append("\n\n");
  return Chunk(event);
}

std::string EncodeSseKeepAlive() { return Chunk(": keep-alive\n\n"); }

bool OutputQueue::Push(std::string bytes) {
  if (queued_bytes_ + bytes.size() > max_bytes_) {
    return false;
  }
  queued_bytes_ += bytes.size();
  waiting_.push_back(std::move(bytes));
  return true;
}

const std::vector<std::string>& OutputQueue::StartWrite() {
  writing_ = true;
  in_flight_.clear();
  while (!waiting_.empty()) {
    in_flight_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
  }
  return in_flight_;
}

void OutputQueue::Written() {
  writing_ = false;
  for (const std::string& bytes : in_flight_) {
    queued_bytes_ -= bytes.size();
  }
  in_flight_.clear();
}

}  // namespace relay::gateway
