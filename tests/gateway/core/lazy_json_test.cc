#include "gateway/core/lazy_json.h"

#include "gtest/gtest.h"

namespace relay::gateway {
namespace {

TEST(LazyJson, AbsentHasNoMembersAndNoText) {
  LazyJson absent;
  EXPECT_FALSE(absent.present());
  EXPECT_FALSE(absent.is_object());
  EXPECT_FALSE(absent.KindOf("name"));
  EXPECT_TRUE(absent.value().is_null());
  EXPECT_EQ(absent.text(), "");
}

TEST(LazyJson, TextGoesOnAsSentWhenUnchanged) {
  // Spacing, key order, number spelling and escapes are the peer's.
  const std::string sent = R"({"z": 1.50e2, "a":"\u00e9", "big":123456789012345678901234567890})";
  LazyJson params = LazyJson::FromText(sent);
  EXPECT_TRUE(params.present());
  EXPECT_TRUE(params.is_object());
  EXPECT_EQ(params.StringOf("a"), "\xc3\xa9");
  EXPECT_EQ(params.KindOf("z"), '1');
  EXPECT_EQ(params.text(), sent);
  EXPECT_EQ(params.value()["a"], "\xc3\xa9");  // reading does not change it
  EXPECT_EQ(params.text(), sent);
  EXPECT_EQ(std::move(params).text(), sent);
}

TEST(LazyJson, MembersAreFoundAsAParserFindsThem) {
  // The last duplicate wins and keys are compared unescaped: a rule checks
  // the name the tab will read.
  LazyJson params = LazyJson::FromText(R"({"name":"hidden","n\u0061me":"shown","uri":3})");
  EXPECT_EQ(params.StringOf("name"), "shown");
  EXPECT_EQ(params.KindOf("uri"), '3');
  EXPECT_FALSE(params.StringOf("uri"));
  EXPECT_FALSE(params.KindOf("missing"));
  EXPECT_EQ(params.StringOf("name"), params.value()["name"].get<std::string>());
}

TEST(LazyJson, ObjectsInsideAreReadTheSameWay) {
  LazyJson params = LazyJson::FromText(R"({"_meta":{"progressToken":"p"},"ref":[1]})");
  EXPECT_EQ(params.ObjectOf("_meta").KindOf("progressToken"), '"');
  EXPECT_FALSE(params.ObjectOf("ref").present());  // an array, not an object
  EXPECT_FALSE(params.ObjectOf("missing").KindOf("progressToken"));
  EXPECT_FALSE(LazyJson::FromText("[1,2]").KindOf("0"));
}

TEST(LazyJson, AChangeIsWrittenOut) {
  LazyJson params = LazyJson::FromText(R"({"a":1,  "b":2})");
  params.mutable_value().erase("b");
  EXPECT_EQ(params.text(), R"({"a":1})");
  EXPECT_FALSE(params.KindOf("b"));
  EXPECT_EQ(params.KindOf("a"), '0');
}

TEST(LazyJson, AParsedValueAnswersLikeItsText) {
  nlohmann::json value = {{"name", "x"}, {"flag", true}, {"meta", {{"k", nullptr}}}};
  LazyJson parsed = LazyJson::FromValue(value);
  LazyJson text = LazyJson::FromText(value.dump());
  for (const char* key : {"name", "flag", "meta", "missing"}) {
    EXPECT_EQ(parsed.KindOf(key), text.KindOf(key)) << key;
    EXPECT_EQ(parsed.StringOf(key), text.StringOf(key)) << key;
  }
  EXPECT_EQ(parsed.ObjectOf("meta").KindOf("k"), 'n');
  EXPECT_EQ(parsed.text(), value.dump());
  EXPECT_FALSE(LazyJson::FromValue(nullptr).present());
}

}  // namespace
}  // namespace relay::gateway
