#pragma once

#include "absl/strings/string_view.h"
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace relay::common {

// One field of a log line. Never pass a token, ticket, relay key or session
// secret: logs are read by people who must not see them.
using LogValue = std::variant<absl::string_view, int64_t, uint64_t, double, bool>;
using LogFields = std::initializer_list<std::pair<absl::string_view, LogValue>>;

enum class LogLevel { kDebug, kInfo, kWarn, kError };

// Lines below level are not written (info by default; --log_level sets it).
void SetLogLevel(LogLevel level);
// Whether a line of level would be written: callers building costly fields
// for debug lines ask first.
bool LogEnabled(LogLevel level);
std::optional<LogLevel> ParseLogLevel(absl::string_view name);

// Names the service in every line ("gateway", "router", ...). Call once in main.
void SetLogService(absl::string_view service);

// Writes one JSON line to stdout: {"ts","level","service","msg",...fields}.
// Thread-safe; each line is written with a single write so lines never interleave.
void Log(LogLevel level, absl::string_view msg, LogFields fields = {});

inline void LogInfo(absl::string_view msg, LogFields fields = {}) {
  Log(LogLevel::kInfo, msg, fields);
}
inline void LogWarn(absl::string_view msg, LogFields fields = {}) {
  Log(LogLevel::kWarn, msg, fields);
}
inline void LogError(absl::string_view msg, LogFields fields = {}) {
  Log(LogLevel::kError, msg, fields);
}

// Logs msg at error level and exits with status 1: start-up failures only.
[[noreturn]] void Fatal(absl::string_view msg, LogFields fields = {});

}  // namespace relay::common

namespace relay::common {

// The first log line of every binary: "listening on HOST:PORT" with the real
// port, which scripts and tests wait for. listen is the configured host:port.
void LogListening(const std::string& listen, int port);

}  // namespace relay::common
