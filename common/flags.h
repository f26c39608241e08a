#pragma once

#include <string>
#include <vector>

namespace relay::common {

// Parses the command line with Abseil flags after applying environment twins:
// every flag --name may also be set as RELAY_NAME (upper case); the command
// line wins. A malformed value in the environment is fatal, like a bad flag.
// Returns the positional arguments (argv[0] first).
std::vector<char*> ParseFlagsWithEnv(int argc, char** argv);

// Splits "a,b,,c " into {"a","b","c"}: empty items and spaces are dropped.
std::vector<std::string> SplitList(const std::string& csv);

}  // namespace relay::common
