#include "absl/strings/string_view.h"
#include "common/flags.h"

#include <cctype>
#include <cstdlib>
#include <optional>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/commandlineflag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "common/log.h"

ABSL_FLAG(std::string, log_level, "info",
          "the least level logged: debug (adds a line per forwarded call), info, warn or error");

namespace relay::common {

std::vector<char*> ParseFlagsWithEnv(int argc, char** argv) {
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    std::string env_name = "RELAY_" + absl::AsciiStrToUpper(name);
    const char* value = std::getenv(env_name.c_str());
    if (value == nullptr) {
      continue;
    }
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      Fatal("bad value in environment", {{"variable", env_name}, {"error", error}});
    }
  }
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  std::optional<LogLevel> level = ParseLogLevel(absl::GetFlag(FLAGS_log_level));
  if (!level) {
    Fatal("bad --log_level: give debug, info, warn or error");
  }
  SetLogLevel(*level);
  return positional;
}

std::vector<std::string> SplitList(const std::string& csv) {
  std::vector<std::string> out;
  for (absl::string_view item : absl::StrSplit(csv, ',')) {
    item = absl::StripAsciiWhitespace(item);
    if (!item.empty()) {
      out.emplace_back(item);
    }
  }
  return out;
}

}  // namespace relay::common
