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

TEST(Catalogue, RolesMustBeAnArrayOfStrings) {
  EXPECT_FALSE(Catalogue::Parse(R"({"tools":[{"name":"a","roles":"editor"}]})").ok());
  EXPECT_FALSE(Catalogue::Parse(R"({"tools":[{"name":"a","roles":[1]}]})").ok());
  // "" would be the view of tokens without a role.
  EXPECT_FALSE(Catalogue::Parse(R"({"tools":[{"name":"a","roles":[""]}]})").ok());
  EXPECT_TRUE(Catalogue::Parse(R"({"tools":[{"name":"a","roles":[]}]})").ok());
}

TEST(Catalogue, AnEntryForEveryoneWithTheSameNameIsNotHidden) {
  auto c = Catalogue::Parse(
      R"({"tools":[{"name":"a","roles":["editor"]},{"name":"a"}],"prompts":[{"name":"p","roles":[]}]})");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->Hides(Catalogue::Kind::kTool, "viewer", "a"));
  EXPECT_TRUE(c->Hides(Catalogue::Kind::kPrompt, "viewer", "p"));  // roles [] : no one
  EXPECT_TRUE(c->Hides(Catalogue::Kind::kPrompt, "", "p"));
}

TEST(Catalogue, AResourceForEveryoneStaysVisibleThoughAHiddenTemplateMatchesIt) {
  auto c = Catalogue::Parse(
      R"({"resources":[{"uri":"doc://outline"}],"resourceTemplates":[{"uriTemplate":"doc://{id}","roles":["editor"]}]})");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->Hides(Catalogue::Kind::kResource, "viewer", "doc://outline"));
  EXPECT_TRUE(c->Hides(Catalogue::Kind::kResource, "viewer", "doc://other"));
}

TEST(Catalogue, WhatARoleSeesItMayUseThoughATemplateHiddenFromItMatches) {
  auto c = Catalogue::Parse(R"({
    "resources":[{"uri":"doc://b","roles":["editor"]}],
    "resourceTemplates":[{"uriTemplate":"doc://{id}","roles":["owner"]},{"uriTemplate":"draft://{id}","roles":["editor"]},
                         {"uriTemplate":"draft://{id}x","roles":["owner"]}]})");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->Hides(Catalogue::Kind::kResource, "editor", "doc://b"));
  EXPECT_TRUE(c->Hides(Catalogue::Kind::kResource, "editor", "doc://c"));
  EXPECT_FALSE(c->Hides(Catalogue::Kind::kResource, "editor", "draft://1x"));
  EXPECT_TRUE(c->Hides(Catalogue::Kind::kResource, "viewer", "draft://1x"));
}

TEST(Catalogue, AtMost64Roles) {
  std::string roles;
  for (int i = 0; i < 65; ++i) roles += (i ? "," : "") + std::string("\"r") + std::to_string(i) + "\"";
  EXPECT_FALSE(Catalogue::Parse(R"({"tools":[{"name":"a","roles":[)" + roles + "]}]}").ok());
}

TEST(Catalogue, ARoleNoEntryNamesSeesTheBaseView) {
  auto c = Catalogue::Parse(R"({"tools":[{"name":"a"},{"name":"b","roles":["editor"]}]})");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->View("stranger").tools, R"([{"name":"a"}])");
  EXPECT_EQ(c->View("").tools, R"([{"name":"a"}])");
  EXPECT_EQ(c->View("editor").tools, R"([{"name":"a"},{"name":"b"}])");
}

TEST(Catalogue, ListChangedOnlyForTheListsThatChangedInAView) {
  auto before = Catalogue::Parse(R"({"tools":[{"name":"a"},{"name":"b","roles":["editor"]}]})");
  auto after = Catalogue::Parse(R"({"tools":[{"name":"a"},{"name":"c","roles":["editor"]}]})");
  ASSERT_TRUE(before.ok() && after.ok());
  EXPECT_TRUE(ListChangedNotices(before->View("viewer"), after->View("viewer")).empty());
  auto notices = ListChangedNotices(before->View("editor"), after->View("editor"));
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("notifications/tools/list_changed"), std::string::npos);
}

TEST(UriTemplate, ExpressionsStandForOneOrMoreCharacters) {
  EXPECT_TRUE(MatchesUriTemplate("draft://{id}", "draft://42"));
  EXPECT_FALSE(MatchesUriTemplate("draft://{id}", "draft://"));
  EXPECT_TRUE(MatchesUriTemplate("file:///{dir}/{name}.txt", "file:///a/b/c.txt"));
  EXPECT_FALSE(MatchesUriTemplate("file:///{dir}/{name}.txt", "file:///a.md"));
  EXPECT_TRUE(MatchesUriTemplate("repo://{o}/{r}/{p}.md", "repo://a/b/c/d.md"));
  EXPECT_FALSE(MatchesUriTemplate("repo://{o}/{r}/{p}.md", "repo://" + std::string(95, '/')));
  // Pathological: bounded, and the answer is the one asked for when unsure.
  std::string many;
  for (int i = 0; i < 30; ++i) many += "{x}";
  std::string uri(5000, 'a');
  EXPECT_TRUE(MatchesUriTemplate(many + "b", uri, /*if_unsure=*/true));
  EXPECT_FALSE(MatchesUriTemplate(many + "b", uri, /*if_unsure=*/false));
}

TEST(CatalogueFile, MissingFileFailsToOpen) {
  EXPECT_FALSE(CatalogueFile::Open("/nonexistent/tools.json").ok());
}

}  // namespace
}  // namespace relay::gateway
