#include "gateway/core/catalogue.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "testing/status_matchers.h"

namespace relay::gateway {
namespace {

using ::relay::testing::IsOk;
using ::relay::testing::StatusIs;

TEST(Catalogue, FullObject) {
  auto c = Catalogue::Parse(R"({"tools":[{"name":"a"}],"resources":[{"uri":"editor://view"}],
      "resourceTemplates":[{"uriTemplate":"editor://{x}"}],"prompts":[{"name":"p"}]})");
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(nlohmann::json::parse(c->tools)[0]["name"], "a");
  EXPECT_EQ(nlohmann::json::parse(c->resources)[0]["uri"], "editor://view");
  EXPECT_EQ(nlohmann::json::parse(c->resource_templates).size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(c->prompts).size(), 1u);
}

TEST(Catalogue, BareArrayIsTools) {
  auto c = Catalogue::Parse(R"([{"name":"a"},{"name":"b","inputSchema":{"type":"object"}}])");
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(nlohmann::json::parse(c->tools).size(), 2u);
  EXPECT_EQ(c->prompts, "[]");
}

TEST(Catalogue, MissingMembersAreEmpty) {
  auto c = Catalogue::Parse("{}");
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->tools, "[]");
  EXPECT_EQ(c->resources, "[]");
}

TEST(Catalogue, BadInputIsAnErrorNotACrash) {
  for (const char* text : {"", "{", "42", R"({"tools":{}})", R"({"tools":[1]})",
                           R"({"tools":[{"title":"no name"}]})", R"({"resources":[{"name":"x"}]})",
                           R"({"tools":[{"name":7}]})"}) {
    EXPECT_THAT(Catalogue::Parse(text), StatusIs(absl::StatusCode::kInvalidArgument)) << text;
  }
}

class CatalogueFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/catalogue-test-XXXXXX";
    int fd = mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    close(fd);
    path_ = tmpl;
  }
  void TearDown() override { std::remove(path_.c_str()); }
  void Write(const std::string& text) {
    std::ofstream(path_, std::ios::trunc) << text;
  }
  std::string path_;
};

TEST_F(CatalogueFileTest, RereadsWhenTheFileChanges) {
  Write(R"([{"name":"a"}])");
  auto file = CatalogueFile::Open(path_);
  ASSERT_THAT(file, IsOk());
  EXPECT_EQ(*(*file)->Refresh(), false);
  Write(R"([{"name":"a"},{"name":"bb"}])");  // a different size: a different stamp
  EXPECT_EQ(*(*file)->Refresh(), true);
  EXPECT_EQ(nlohmann::json::parse((*file)->Get()->tools).size(), 2u);
}

TEST_F(CatalogueFileTest, KeepsTheLastGoodCatalogueWhenTheFileBreaks) {
  Write(R"([{"name":"a"}])");
  auto file = CatalogueFile::Open(path_);
  ASSERT_THAT(file, IsOk());
  Write("{ broken");
  EXPECT_FALSE((*file)->Refresh().ok());
  EXPECT_EQ(nlohmann::json::parse((*file)->Get()->tools)[0]["name"], "a");
}

TEST(CatalogueFile, MissingFileFailsToOpen) {
  EXPECT_FALSE(CatalogueFile::Open("/nonexistent/tools.json").ok());
}

}  // namespace
}  // namespace relay::gateway
