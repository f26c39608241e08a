#include "absl/strings/string_view.h"
#include "common/log.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace relay::common {
namespace {

std::string& Service() {
  static std::string* service = new std::string("relay");
  return *service;
}

absl::string_view LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};

}  // namespace

void SetLogLevel(LogLevel level) { g_level.store(static_cast<int>(level)); }

bool LogEnabled(LogLevel level) {
  return static_cast<int>(level) >= g_level.load(std::memory_order_relaxed);
}

std::optional<LogLevel> ParseLogLevel(absl::string_view name) {
  for (LogLevel level : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    if (name == LevelName(level)) {
      return level;
    }
  }
  return std::nullopt;
}

void SetLogService(absl::string_view service) { Service() = std::string(service); }

void Log(LogLevel level, absl::string_view msg, LogFields fields) {
  if (!LogEnabled(level)) {
    return;
  }
  nlohmann::json line = nlohmann::json::object();
  line["ts"] = absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone());
  line["level"] = std::string(LevelName(level));
  line["service"] = Service();
  line["msg"] = std::string(msg);
  for (const auto& [key, value] : fields) {
    std::visit(
        [&line, key = std::string(key)](const auto& v) {
          if constexpr (std::is_same_v<std::decay_t<decltype(v)>, absl::string_view>) {
            line[key] = std::string(v);
          } else {
            line[key] = v;
          }
        },
        value);
  }
  // Invalid UTF-8 from a peer must not throw: replace it.
  std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  text.push_back('\n');
  // One write(2) per line: atomic for lines under PIPE_BUF on pipes, and never
  // interleaved by stdio buffers of other threads.
  ssize_t ignored = ::write(STDOUT_FILENO, text.data(), text.size());
  (void)ignored;
}

void Fatal(absl::string_view msg, LogFields fields) {
  Log(LogLevel::kError, msg, fields);
  std::exit(1);
}

}  // namespace relay::common

namespace relay::common {

void LogListening(const std::string& listen, int port) {
  std::string host = listen.substr(0, listen.rfind(':'));
  LogInfo("listening on " + host + ":" + std::to_string(port));
}

}  // namespace relay::common
