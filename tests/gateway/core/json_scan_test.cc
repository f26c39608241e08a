#include "gateway/core/json_scan.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace relay::gateway {
namespace {

TEST(ScanJson, SplitsATopLevelObjectIntoKeysAndRawValues) {
  ScannedJson scan = ScanJson(R"( {"id" : 7, "result":{"a":[1, 2.5e3, "x"]} ,"n":null} )");
  ASSERT_TRUE(scan.valid);
  ASSERT_TRUE(scan.is_object);
  ASSERT_EQ(scan.members.size(), 3u);
  EXPECT_EQ(scan.members[0].key, "id");
  EXPECT_EQ(scan.members[0].value, "7");
  EXPECT_EQ(scan.members[1].key, "result");
  // The peer's bytes, spacing and number spelling kept.
  EXPECT_EQ(scan.members[1].value, R"({"a":[1, 2.5e3, "x"]})");
  EXPECT_EQ(scan.members[2].key, "n");
  EXPECT_EQ(scan.members[2].value, "null");
}

TEST(ScanJson, NestedKeysAreNotTopLevelMembers) {
  ScannedJson scan = ScanJson(R"({"params":{"id":1,"result":[{"error":2}]}})");
  ASSERT_TRUE(scan.valid);
  ASSERT_EQ(scan.members.size(), 1u);
  EXPECT_EQ(scan.members[0].key, "params");
}

TEST(ScanJson, EscapedKeysAreUnescapedAndDuplicatesKept) {
  ScannedJson scan = ScanJson(R"({"\u0069d":1,"id":2})");
  ASSERT_TRUE(scan.valid);
  ASSERT_EQ(scan.members.size(), 2u);
  EXPECT_EQ(scan.members[0].key, "id");
  EXPECT_EQ(scan.members[1].value, "2");
}

TEST(ScanJson, OtherValuesAreValidButNotObjects) {
  for (const char* text : {"[]", "1", "\"s\"", "true", " null ", "-0.5E+3", "[{}]"}) {
    ScannedJson scan = ScanJson(text);
    EXPECT_TRUE(scan.valid) << text;
    EXPECT_FALSE(scan.is_object) << text;
    EXPECT_TRUE(scan.members.empty()) << text;
  }
  EXPECT_TRUE(ScanJson("{}").is_object);
  EXPECT_TRUE(ScanJson("{}").members.empty());
}

TEST(ScanJson, StopsWhereNestingPassesTheLimit) {
  EXPECT_FALSE(ScanJson(R"({"a":[1,{"b":[]}]})", 4).too_deep);
  EXPECT_TRUE(ScanJson(R"({"a":[1,{"b":[]}]})", 4).valid);
  ScannedJson deep = ScanJson(R"({"a":[1,{"b":[]}]})", 3);
  EXPECT_TRUE(deep.too_deep);
  EXPECT_FALSE(deep.valid);
  // Brackets inside strings do not count, and a huge depth costs no stack.
  EXPECT_FALSE(ScanJson(R"({"a":"[[[[\"[[[["})", 1).too_deep);
  std::string huge = std::string(200000, '[') + std::string(200000, ']');
  EXPECT_TRUE(ScanJson(huge, 100).too_deep);
  EXPECT_TRUE(ScanJson(huge).valid);
}

// Texts nlohmann refuses, each for a reason of its own.
const char* const kInvalid[] = {
    "", " ", "{", "}", "[", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "[1,]", "[,1]", "{,}",
    "{\"a\":1 \"b\":2}", "{1:2}", "01", "-", "1.", ".5", "1e", "1e+", "+1", "0x10", "tru",
    "nulll", "True", "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\uZZZZ\"", "\"\\ud800\"",
    "\"\\ud800\\u0041\"", "\"\\udc00\"", "\"a\tb\"", std::string("\"a\0b\"", 5).c_str(),
    "\"\xff\"", "\"\xc0\x80\"", "\"\xc2\"", "\"\xe0\x80\x80\"", "\"\xed\xa0\x80\"",
    "\"\xf0\x80\x80\x80\"", "\"\xf4\x90\x80\x80\"", "\"\xf5\x80\x80\x80\"", "\xef\xbb",
    "1e999", "-3e603",  // too large for a double: "number overflow"
    "{}{}", "{} x", "[1] 2", "// c\n{}", "{\"a\":1}}", "\xef\xbb\xbf",
};

// Texts it accepts that a careless scanner might not.
const char* const kValid[] = {
    "\xef\xbb\xbf{}", "\"\\ud83d\\ude00\"", "\"\xf0\x9f\x98\x80\"", "\"\xe2\x82\xac\"",
    "\"\xed\x9f\xbf\"", "\"\xf4\x8f\xbf\xbf\"", "\"\\/\\b\\f\\n\\r\\t\\\"\\\\\"", "-0", "0e0",
    "1E-7", "1e-999", "123456789012345678901234567890", " \t\r\n[ ] ", "{\"\":\"\"}",
    "[[[[[]]]]]", "\"\x7f\"",
};

TEST(ScanJson, AgreesWithNlohmannOnEdgeCases) {
  for (const char* text : kInvalid) {
    EXPECT_FALSE(nlohmann::json::accept(text)) << "bad fixture: " << text;
    EXPECT_FALSE(ScanJson(text).valid) << text;
  }
  for (const char* text : kValid) {
    EXPECT_TRUE(nlohmann::json::accept(text)) << "bad fixture: " << text;
    EXPECT_TRUE(ScanJson(text).valid) << text;
  }
  std::string with_nul("\"a\0b\"", 5);
  EXPECT_FALSE(ScanJson(with_nul).valid);
  // Outside a string a NUL ends the text, for nlohmann as for the scan.
  std::string after_nul("{\"a\":1}\0junk", 12);
  EXPECT_TRUE(nlohmann::json::accept(after_nul));
  ASSERT_TRUE(ScanJson(after_nul).valid);
  EXPECT_EQ(ScanJson(after_nul).members.at(0).value, "1");
  EXPECT_FALSE(ScanJson(std::string("[1,\0]", 5)).valid);
  // Digits alone can overflow a double too, and fewer of them cannot.
  EXPECT_FALSE(ScanJson(std::string(400, '9')).valid);
  EXPECT_FALSE(nlohmann::json::accept(std::string(400, '9')));
  EXPECT_TRUE(ScanJson("0." + std::string(400, '9')).valid);
  EXPECT_TRUE(nlohmann::json::accept("0." + std::string(400, '9')));
}

// Mutations of real messages: every text's verdict must be nlohmann's, and
// every top-level member's raw value must parse to nlohmann's member.
TEST(ScanJson, AgreesWithNlohmannOnMutatedMessages) {
  const std::vector<std::string> seeds = {
      R"({"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"h\u00e9llo \ud83d\ude00"}],"isError":false}})",
      R"({"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"echo","arguments":{"n":-1.5e-3,"b":[true,false,null]}}})",
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32603,\"message\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}}",
  };
  const std::string alphabet = "{}[]\",:\\ -+.0123456789eEtrufalsn\x80\xbf\xc3\xe2\xed\xf0\xf4\xff\t\n";
  std::mt19937 random(12345);
  int agreed_valid = 0;
  for (int round = 0; round < 30000; ++round) {
    std::string text = seeds[round % seeds.size()];
    const int edits = 1 + static_cast<int>(random() % 3);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      const size_t at = random() % text.size();
      const char c = alphabet[random() % alphabet.size()];
      switch (random() % 3) {
        case 0: text[at] = c; break;
        case 1: text.insert(text.begin() + static_cast<std::ptrdiff_t>(at), c); break;
        default: text.erase(at, 1); break;
      }
    }
    ScannedJson scan = ScanJson(text);
    const bool accepted = nlohmann::json::accept(text);
    ASSERT_EQ(scan.valid, accepted) << text;
    if (!accepted) continue;
    ++agreed_valid;
    nlohmann::json parsed = nlohmann::json::parse(text);
    ASSERT_EQ(scan.is_object, parsed.is_object()) << text;
    if (!parsed.is_object()) continue;
    // The last of duplicate keys is the one a parsed object keeps.
    std::map<std::string, std::string> last;
    for (const JsonMember& member : scan.members) last[member.key] = std::string(member.value);
    ASSERT_EQ(last.size(), parsed.size()) << text;
    for (const auto& [key, raw] : last) {
      ASSERT_EQ(nlohmann::json::parse(raw), parsed.at(key)) << text << " member " << key;
    }
  }
  // Enough of the mutants stay valid for the member check to mean something.
  EXPECT_GT(agreed_valid, 1000);
}

}  // namespace
}  // namespace relay::gateway
