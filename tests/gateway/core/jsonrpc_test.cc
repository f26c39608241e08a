#include "gateway/core/jsonrpc.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace relay::gateway {
namespace {

RpcMessage Ok(const std::string& text) {
  auto decoded = DecodeMessage(text);
  EXPECT_TRUE(std::holds_alternative<RpcMessage>(decoded)) << text;
  return std::get<RpcMessage>(std::move(decoded));
}

RpcFailure Bad(const std::string& text) {
  auto decoded = DecodeMessage(text);
  EXPECT_TRUE(std::holds_alternative<RpcFailure>(decoded)) << text;
  return std::get<RpcFailure>(std::move(decoded));
}

TEST(DecodeMessage, Request) {
  RpcMessage m = Ok(R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}})");
  EXPECT_EQ(m.kind, RpcMessage::Kind::kRequest);
  EXPECT_EQ(m.id, 7);
  EXPECT_EQ(m.method, "tools/call");
  EXPECT_EQ(m.params.StringOf("name"), "x");
  EXPECT_EQ(m.params.text(), R"({"name":"x"})");
}

TEST(DecodeMessage, IdZeroAndStringIdsAreRequests) {
  EXPECT_EQ(Ok(R"({"jsonrpc":"2.0","id":0,"method":"ping"})").kind, RpcMessage::Kind::kRequest);
  EXPECT_EQ(Ok(R"({"jsonrpc":"2.0","id":"a","method":"ping"})").id, "a");
}

TEST(DecodeMessage, NotificationHasNoId) {
  RpcMessage m = Ok(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  EXPECT_EQ(m.kind, RpcMessage::Kind::kNotification);
  EXPECT_TRUE(m.id.is_null());
}

TEST(DecodeMessage, Responses) {
  RpcMessage result = Ok(R"({"jsonrpc":"2.0","id":3,"result":{"a":1}})");
  EXPECT_EQ(result.kind, RpcMessage::Kind::kResponse);
  EXPECT_FALSE(result.is_error);
  EXPECT_EQ(result.payload, R"({"a":1})");
  RpcMessage error = Ok(R"({"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"m"}})");
  EXPECT_TRUE(error.is_error);
  EXPECT_EQ(error.payload, R"({"code":-1,"message":"m"})");
}

TEST(DecodeMessage, MalformedJsonIsParseError) {
  for (const char* text : {"", "{", "{\"jsonrpc\":\"2.0\",", "nul", "\xff\xfe", "{\"a\":1}}"}) {
    RpcFailure f = Bad(text);
    EXPECT_EQ(f.code, kParseError) << text;
    EXPECT_TRUE(f.id.is_null());
  }
}

TEST(DecodeMessage, WellFormedNonMessagesAreInvalidRequests) {
  EXPECT_EQ(Bad("42").code, kInvalidRequest);
  EXPECT_EQ(Bad("[]").code, kInvalidRequest);
  EXPECT_EQ(Bad(R"({"id":1,"method":"ping"})").code, kInvalidRequest);
  EXPECT_EQ(Bad(R"({"jsonrpc":"1.0","id":1,"method":"ping"})").code, kInvalidRequest);
  // Five characters with "2.0" inside that are not the string "2.0".
  EXPECT_EQ(Bad(R"({"jsonrpc":12.05,"id":1,"method":"ping"})").code, kInvalidRequest);
  EXPECT_EQ(Bad(R"({"jsonrpc":[2.0],"id":1,"method":"ping"})").code, kInvalidRequest);
  EXPECT_EQ(Bad(R"({"jsonrpc":-2.00,"id":1,"method":"ping"})").code, kInvalidRequest);
  // An escaped spelling of "2.0" is "2.0".
  EXPECT_EQ(Ok(R"({"jsonrpc":"\u0032.0","id":1,"method":"ping"})").method, "ping");
  EXPECT_EQ(Bad(R"({"jsonrpc":"2.0","id":1,"method":5})").code, kInvalidRequest);
  EXPECT_EQ(Bad(R"({"jsonrpc":"2.0","id":1,"method":"x","params":3})").code, kInvalidRequest);
  EXPECT_EQ(Bad(R"({"jsonrpc":"2.0","id":{},"method":"x"})").code, kInvalidRequest);
  EXPECT_EQ(Bad(R"({"jsonrpc":"2.0","id":1.5,"method":"x"})").code, kInvalidRequest);
  EXPECT_EQ(Bad(R"({"jsonrpc":"2.0","id":1})").code, kInvalidRequest);
  EXPECT_EQ(Bad(R"({"jsonrpc":"2.0","id":1,"result":1,"error":{}})").code, kInvalidRequest);
  EXPECT_EQ(Bad(R"({"jsonrpc":"2.0","id":1,"error":"x"})").code, kInvalidRequest);
}

TEST(DecodeMessage, InvalidRequestKeepsTheIdWhenReadable) {
  EXPECT_EQ(Bad(R"({"jsonrpc":"1.0","id":9,"method":"ping"})").id, 9);
}

TEST(Encode, ResultSplicesRawJson) {
  EXPECT_EQ(EncodeResult(0, R"({"x":[1,2]})"), R"({"jsonrpc":"2.0","id":0,"result":{"x":[1,2]}})");
  EXPECT_EQ(EncodeResult("s", "{}"), R"({"jsonrpc":"2.0","id":"s","result":{}})");
}

TEST(Encode, ErrorHasOnlyAllowedMembers) {
  auto encoded = nlohmann::json::parse(EncodeError(nullptr, kParseError, "bad \"json\""));
  EXPECT_EQ(encoded.size(), 3u);
  EXPECT_TRUE(encoded["id"].is_null());
  EXPECT_EQ(encoded["error"]["code"], kParseError);
  EXPECT_EQ(encoded["error"]["message"], "bad \"json\"");
  EXPECT_FALSE(encoded.contains("result"));
}

TEST(Encode, RequestWithAndWithoutParams) {
  EXPECT_EQ(EncodeRequest(12, "tools/call", R"({"name":"a"})"),
            R"({"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"a"}})");
  EXPECT_EQ(EncodeRequest(1, "ping", ""), R"({"jsonrpc":"2.0","id":1,"method":"ping"})");
}

TEST(Encode, DumpJsonWritesWhatTheSerializerWrites) {
  // Integers and plain strings skip the serializer: the same text either way.
  for (const nlohmann::json& value :
       {nlohmann::json(0), nlohmann::json(-1), nlohmann::json(7u),
        nlohmann::json(std::numeric_limits<uint64_t>::max()),
        nlohmann::json(std::numeric_limits<int64_t>::min()), nlohmann::json(""),
        nlohmann::json("a b~"), nlohmann::json("q\"q"), nlohmann::json("b\\s"),
        nlohmann::json("tab\t"), nlohmann::json("\x7f"), nlohmann::json("\xc3\xa9"),
        nlohmann::json(1.5), nlohmann::json(nullptr), nlohmann::json({{"a", 1}})}) {
    EXPECT_EQ(DumpJson(value), value.dump()) << value.dump();
  }
}

TEST(Encode, InvalidUtf8FromAPeerDoesNotThrow) {
  nlohmann::json id = std::string("\xff");
  EXPECT_NO_THROW(EncodeError(id, kInvalidRequest, "x"));
}

}  // namespace
}  // namespace relay::gateway

namespace relay::gateway {
namespace {

TEST(JsonDepthTest, CountsNestingOutsideStringsOnly) {
  EXPECT_FALSE(NestsDeeperThan(R"({"a":[1,{"b":[]}]})", 4));
  EXPECT_TRUE(NestsDeeperThan(R"({"a":[1,{"b":[]}]})", 3));
  // Brackets inside strings, escaped quotes included, do not count.
  EXPECT_FALSE(NestsDeeperThan(R"({"a":"[[[[\"[[[["})", 1));
  std::string deep = std::string(200000, '[') + std::string(200000, ']');
  EXPECT_TRUE(NestsDeeperThan(deep, 100));
  EXPECT_FALSE(NestsDeeperThan(std::string(100, '[') + std::string(100, ']'), 100));
}

TEST(JsonDepthTest, ATooDeepMessageIsAParseErrorThatKeepsItsTopLevelId) {
  std::string deep = std::string(5000, '[') + std::string(5000, ']');
  auto decoded = DecodeMessage(R"({"jsonrpc":"2.0","id":42,"method":"x","params":)" + deep + "}");
  auto* failure = std::get_if<RpcFailure>(&decoded);
  ASSERT_NE(failure, nullptr);
  EXPECT_EQ(failure->code, kParseError);
  EXPECT_EQ(failure->id, 42);
  // The id after the deep part, and an id nested below the top level.
  EXPECT_EQ(TopLevelId(R"({"result":)" + deep + R"(,"id":"abc"})"), "abc");
  EXPECT_TRUE(TopLevelId(R"({"params":{"id":7}})").is_null());
}

TEST(JsonDepthTest, TooDeepWinsOverMalformedWhereverEachIs) {
  // The syntax error comes before the depth: still "too deep", id kept, so
  // that a tab's broken deep answer ends its call.
  std::string deep = std::string(500, '[') + std::string(500, ']');
  auto decoded = DecodeMessage(R"({"jsonrpc":"2.0","id":5,"result":x)" + deep + "}");
  auto* failure = std::get_if<RpcFailure>(&decoded);
  ASSERT_NE(failure, nullptr);
  EXPECT_TRUE(failure->too_deep);
  EXPECT_EQ(failure->code, kParseError);
  // Malformed and shallow: a plain parse error.
  auto shallow = DecodeMessage(R"({"jsonrpc":"2.0","id":5,"result":x})");
  EXPECT_FALSE(std::get<RpcFailure>(shallow).too_deep);
}

TEST(DecodeMessage, AResponsePayloadIsThePeersText) {
  RpcMessage m = Ok("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\": {\"n\": 1.50e2,\n \"s\":\"\\u00e9\"} }");
  EXPECT_EQ(m.payload, "{\"n\": 1.50e2,\n \"s\":\"\\u00e9\"}");
}

TEST(DecodeMessage, IdsAndMethodsReadWithoutAParserAreWhatAParserReads) {
  // Plain strings and short integers skip the parser: the same value, of the
  // same type (an unsigned for a non-negative integer, as nlohmann reads it).
  for (const char* id : {"7", "0", "-0", "-7", "123456789012345678", "-123456789012345678",
                         "1234567890123456789", "18446744073709551615", "\"a\"", "\"\"",
                         "\"a\\u0062\\n\"", "\"\xc3\xa9\""}) {
    std::string text = absl::StrCat(R"({"jsonrpc":"2.0","method":"m\u0031","id":)", id, "}");
    RpcMessage m = Ok(text);
    nlohmann::json expected = nlohmann::json::parse(text);
    EXPECT_EQ(m.id, expected["id"]) << id;
    EXPECT_EQ(m.id.type(), expected["id"].type()) << id;
    EXPECT_EQ(DumpJson(m.id), expected["id"].dump()) << id;
    EXPECT_EQ(m.method, "m1");
  }
  EXPECT_EQ(Ok(R"({"jsonrpc":"2.0","method":"tools/call","id":5})").method, "tools/call");
  // Not integers: refused as ids, as before.
  EXPECT_EQ(Bad(R"({"jsonrpc":"2.0","method":"m","id":1.0})").code, kInvalidRequest);
  EXPECT_EQ(Bad(R"({"jsonrpc":"2.0","method":"m","id":1e2})").code, kInvalidRequest);
}

}  // namespace
}  // namespace relay::gateway
