#include "absl/strings/string_view.h"
#include "gateway/core/catalogue.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "gateway/core/jsonrpc.h"
#include "nlohmann/json.hpp"

namespace relay::gateway {
namespace {

absl::StatusOr<std::string> CheckList(const nlohmann::json& list, absl::string_view member,
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
  }
  return DumpJson(list);
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
    std::string* out;
  };
  for (const Member& m : {Member{"tools", "name", &catalogue.tools},
                          Member{"resources", "uri", &catalogue.resources},
                          Member{"resourceTemplates", "uriTemplate", &catalogue.resource_templates},
                          Member{"prompts", "name", &catalogue.prompts}}) {
    auto it = doc.find(m.name);
    if (it == doc.end()) {
      continue;
    }
    auto list = CheckList(*it, m.name, m.key);
    if (!list.ok()) {
      return list.status();
    }
    *m.out = *std::move(list);
  }
  return catalogue;
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
