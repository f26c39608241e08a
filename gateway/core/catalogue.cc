#include "absl/strings/string_view.h"
#include "gateway/core/catalogue.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gateway/core/jsonrpc.h"
#include "nlohmann/json.hpp"

namespace relay::gateway {
namespace {

// Checks a member's list: objects with a string key, and "roles" (when
// present) an array of strings.
absl::Status CheckList(const nlohmann::json& list, absl::string_view member,
                       absl::string_view key) {
  if (!list.is_array()) {
    return absl::InvalidArgumentError(absl::StrCat("\"", member, "\" must be an array"));
  }
  for (size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& item = list[i];
    auto it = item.is_object() ? item.find(key) : item.end();
    if (!item.is_object() || it == item.end() || !it->is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", member, "\"[", i, "] must be an object with a string \"", key, "\""));
    }
    auto roles = item.find("roles");
    if (roles != item.end() &&
        (!roles->is_array() || !std::all_of(roles->begin(), roles->end(), [](const auto& r) {
          return r.is_string() && !r.template get_ref<const std::string&>().empty();
        }))) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", member, "\"[", i, "].roles must be an array of non-empty strings"));
    }
  }
  return absl::OkStatus();
}

bool Restricted(const nlohmann::json& item) { return item.contains("roles"); }

bool Lists(const nlohmann::json& item, const std::string& role) {
  const nlohmann::json& roles = item["roles"];
  return std::any_of(roles.begin(), roles.end(), [&](const auto& r) { return r == role; });
}

// The items an agent with role sees (role empty: the base view), without "roles".
std::string ViewOf(const nlohmann::json& list, const std::string* role) {
  nlohmann::json out = nlohmann::json::array();
  for (const nlohmann::json& item : list) {
    if (!Restricted(item)) {
      out.push_back(item);
    } else if (role != nullptr && Lists(item, *role)) {
      nlohmann::json copy = item;
      copy.erase("roles");
      out.push_back(std::move(copy));
    }
  }
  return DumpJson(out);
}

int64_t Stamp(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return -1;
  }
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec + st.st_size;
}

}  // namespace

absl::StatusOr<Catalogue> Catalogue::Parse(absl::string_view text) {
  // Kept as JSON and dumped: nothing recursive may see unchecked depth.
  constexpr int kMaxDepth = 256;
  if (NestsDeeperThan(text, kMaxDepth)) {
    return absl::InvalidArgumentError("catalogue nests JSON deeper than 256 levels");
  }
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return absl::InvalidArgumentError("catalogue is not valid JSON");
  }
  if (doc.is_array()) {
    doc = nlohmann::json{{"tools", std::move(doc)}};
  }
  if (!doc.is_object()) {
    return absl::InvalidArgumentError("catalogue must be an object or an array of tools");
  }
  Catalogue catalogue;
  struct Member {
    const char* name;
    const char* key;
    std::string CatalogueView::*view;
    absl::flat_hash_map<std::string, std::vector<std::string>>* restricted;
  };
  const Member members[] = {
      {"tools", "name", &CatalogueView::tools, &catalogue.tool_roles},
      {"resources", "uri", &CatalogueView::resources, &catalogue.resource_roles},
      {"resourceTemplates", "uriTemplate", &CatalogueView::resource_templates,
       &catalogue.template_roles},
      {"prompts", "name", &CatalogueView::prompts, &catalogue.prompt_roles}};
  std::set<std::string> roles;
  for (const Member& m : members) {
    auto it = doc.find(m.name);
    if (it == doc.end()) {
      continue;
    }
    if (absl::Status checked = CheckList(*it, m.name, m.key); !checked.ok()) {
      return checked;
    }
    std::set<std::string> open;
    for (const nlohmann::json& item : *it) {
      const std::string& key = item[m.key].get_ref<const std::string&>();
      if (!Restricted(item)) {
        open.insert(key);
        if (m.view == &CatalogueView::resource_templates) {
          catalogue.open_templates.push_back(key);
        } else if (m.view == &CatalogueView::resources) {
          catalogue.open_resources.insert(key);
        }
        continue;
      }
      std::vector<std::string>& seen_by = (*m.restricted)[key];  // "roles": [] is no one
      for (const auto& role : item["roles"]) {
        roles.insert(role.get<std::string>());
        seen_by.push_back(role.get<std::string>());
      }
    }
    // A key that an entry for everyone also has is not hidden from anyone.
    for (const std::string& key : open) {
      m.restricted->erase(key);
    }
  }
  // Each role costs a copy of the lists: a catalogue is not a user directory.
  constexpr size_t kMaxRoles = 64;
  if (roles.size() > kMaxRoles) {
    return absl::InvalidArgumentError(
        absl::StrCat("the catalogue names ", roles.size(), " roles; at most ", kMaxRoles));
  }
  for (const Member& m : members) {
    auto it = doc.find(m.name);
    const nlohmann::json empty = nlohmann::json::array();
    const nlohmann::json& list = it == doc.end() ? empty : *it;
    catalogue.*m.view = ViewOf(list, nullptr);
    for (const std::string& role : roles) {
      catalogue.by_role[role].*m.view = ViewOf(list, &role);
    }
  }
  return catalogue;
}

const CatalogueView& Catalogue::View(absl::string_view role) const {
  auto it = by_role.find(role);
  return it == by_role.end() ? *this : it->second;
}

bool Catalogue::Hides(Kind kind, absl::string_view role, absl::string_view name) const {
  auto sees = [&](const std::vector<std::string>& seen_by) {
    return std::find(seen_by.begin(), seen_by.end(), role) != seen_by.end();
  };
  // 1: listed with roles, role not among them; 0: listed and seen; -1: not listed with roles.
  auto listed = [&](const absl::flat_hash_map<std::string, std::vector<std::string>>& map,
                    const std::string& key) {
    auto it = map.find(key);
    return it == map.end() ? -1 : sees(it->second) ? 0 : 1;
  };
  std::string key(name);
  switch (kind) {
    case Kind::kTool:
      return listed(tool_roles, key) == 1;
    case Kind::kPrompt:
      return listed(prompt_roles, key) == 1;
    case Kind::kResource:
      break;
  }
  int resource = listed(resource_roles, key);
  if (resource == 1 || listed(template_roles, key) == 1) {
    return true;
  }
  // A URI the role's view lists is not hidden, even if a template hidden from
  // it matches the URI too.
  if (resource == 0 || open_resources.contains(key) || template_roles.empty()) {
    return false;
  }
  for (const std::string& open : open_templates) {
    if (MatchesUriTemplate(open, name, /*if_unsure=*/false)) {
      return false;
    }
  }
  for (const auto& [uri_template, seen_by] : template_roles) {
    if (sees(seen_by) && MatchesUriTemplate(uri_template, name, /*if_unsure=*/false)) {
      return false;
    }
  }
  for (const auto& [uri_template, seen_by] : template_roles) {
    if (!sees(seen_by) && MatchesUriTemplate(uri_template, name, /*if_unsure=*/true)) {
      return true;
    }
  }
  return false;
}

std::vector<std::string> ListChangedNotices(const CatalogueView& before,
                                            const CatalogueView& after) {
  std::vector<std::string> notices;
  if (before.tools != after.tools) {
    notices.push_back(R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})");
  }
  if (before.resources != after.resources ||
      before.resource_templates != after.resource_templates) {
    notices.push_back(R"({"jsonrpc":"2.0","method":"notifications/resources/list_changed"})");
  }
  if (before.prompts != after.prompts) {
    notices.push_back(R"({"jsonrpc":"2.0","method":"notifications/prompts/list_changed"})");
  }
  return notices;
}

namespace {

// The longest URI checked against templates; a longer one is answered if_unsure.
constexpr size_t kMaxMatchedUri = 2048;

}  // namespace

bool MatchesUriTemplate(absl::string_view uri_template, absl::string_view uri, bool if_unsure) {
  if (uri.size() > kMaxMatchedUri || uri_template.size() > kMaxMatchedUri) {
    return if_unsure;
  }
  // Each {expression} is a wildcard of one or more characters: the template is
  // read as literals and "?*" pairs, matched by the classic greedy wildcard
  // walk that backtracks only to the last wildcard (O(|template| * |uri|) at
  // worst, no recursion).
  std::string pattern;
  for (size_t i = 0; i < uri_template.size(); ++i) {
    if (uri_template[i] == '{') {
      size_t close = uri_template.find('}', i);
      if (close == absl::string_view::npos) {
        absl::StrAppend(&pattern, uri_template.substr(i));
        break;
      }
      pattern.append("\x01\x02");  // one character, then any number
      i = close;
    } else {
      pattern.push_back(uri_template[i]);
    }
  }
  size_t p = 0;
  size_t u = 0;
  size_t star = std::string::npos;
  size_t star_u = 0;
  while (u < uri.size()) {
    if (p < pattern.size() && (pattern[p] == '\x01' || pattern[p] == uri[u])) {
      ++p;
      ++u;
    } else if (p < pattern.size() && pattern[p] == '\x02') {
      star = p++;
      star_u = u;
    } else if (star != std::string::npos) {
      p = star + 1;
      u = ++star_u;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '\x02') {
    ++p;
  }
  return p == pattern.size();
}

absl::StatusOr<std::unique_ptr<CatalogueFile>> CatalogueFile::Open(std::string path) {
  std::unique_ptr<CatalogueFile> file(new CatalogueFile(std::move(path)));
  auto changed = file->Refresh();
  if (!changed.ok()) {
    return changed.status();
  }
  return file;
}

std::shared_ptr<const Catalogue> CatalogueFile::Get() const {
  absl::MutexLock lock(&mu_);
  return current_;
}

absl::StatusOr<bool> CatalogueFile::Refresh() {
  int64_t stamp = Stamp(path_);
  {
    absl::MutexLock lock(&mu_);
    if (stamp == stamp_ && current_ != nullptr) {
      return false;
    }
  }
  std::ifstream in(path_, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read catalogue ", path_));
  }
  std::ostringstream text;
  text << in.rdbuf();
  auto parsed = Catalogue::Parse(text.str());
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": ", parsed.status().message()));
  }
  auto next = std::make_shared<const Catalogue>(*std::move(parsed));
  absl::MutexLock lock(&mu_);
  stamp_ = stamp;
  current_ = std::move(next);
  return true;
}

}  // namespace relay::gateway
