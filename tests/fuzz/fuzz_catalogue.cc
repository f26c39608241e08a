// The catalogue reader on any file content, and the role rules on any name or URI: the input
// is a catalogue, then (after a NUL) what an agent asks for.
#include <cstddef>
#include <cstdint>
#include <string>

#include "gateway/core/catalogue.h"
#include "gateway/core/jsonrpc.h"
#include "nlohmann/json.hpp"

namespace {

using relay::gateway::Catalogue;

// What a role sees, it may use: nothing listed in its view is hidden from it.
void CheckViewIsUsable(const Catalogue& catalogue, const std::string& role) {
  const relay::gateway::CatalogueView& view = catalogue.View(role);
  struct List {
    const std::string* json;
    const char* key;
    Catalogue::Kind kind;
  };
  for (const List& list : {List{&view.tools, "name", Catalogue::Kind::kTool},
                           List{&view.prompts, "name", Catalogue::Kind::kPrompt},
                           List{&view.resources, "uri", Catalogue::Kind::kResource}}) {
    nlohmann::json items = nlohmann::json::parse(*list.json, nullptr, false);
    if (!items.is_array()) {
      __builtin_trap();  // a list answer must be JSON again
    }
    for (const auto& item : items) {
      if (item.contains("roles") ||
          catalogue.Hides(list.kind, role, item[list.key].get<std::string>())) {
        __builtin_trap();
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view input(reinterpret_cast<const char*>(data), size);
  size_t nul = input.find('\0');
  absl::string_view text = input.substr(0, nul);
  std::string asked(nul == absl::string_view::npos ? "" : input.substr(nul + 1));
  auto catalogue = Catalogue::Parse(text);
  if (catalogue.ok()) {
    if (relay::gateway::NestsDeeperThan(catalogue->tools, 1000)) {
      __builtin_trap();
    }
    CheckViewIsUsable(*catalogue, "");
    for (const auto& [role, view] : catalogue->by_role) {
      CheckViewIsUsable(*catalogue, role);
    }
    for (const char* role : {"", "editor"}) {
      catalogue->Hides(Catalogue::Kind::kTool, role, asked);
      catalogue->Hides(Catalogue::Kind::kResource, role, asked);
    }
    for (const std::string& uri_template : catalogue->open_templates) {
      relay::gateway::MatchesUriTemplate(uri_template, asked);
    }
  }
  return 0;
}
