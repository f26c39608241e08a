#pragma once

#include "absl/strings/string_view.h"
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace relay::gateway {

// The lists one agent may see, kept as ready-made JSON arrays so that a list
// request costs a string copy, not a serialization.
struct CatalogueView {
  std::string tools = "[]";
  std::string resources = "[]";
  std::string resource_templates = "[]";
  std::string prompts = "[]";
  friend bool operator==(const CatalogueView&, const CatalogueView&) = default;
};

// The catalogue: what every agent sees (the base view: entries without
// "roles"), and for each role an entry names, that role's view (the base and
// the entries that list the role). "roles" itself is not shown to agents. An
// entry hidden from a role does not exist for its agents: their calls to it
// get the error of an unknown name.
struct Catalogue : CatalogueView {
  enum class Kind { kTool, kPrompt, kResource };

  // Parses tools.json: {"tools":[…],"resources":[…],"resourceTemplates":[…],
  // "prompts":[…]} with every member optional, or a bare array of tools.
  // Each item must be an object with a string "name" (resources: "uri",
  // templates: "uriTemplate"), and "roles", when present, an array of strings.
  static absl::StatusOr<Catalogue> Parse(absl::string_view text);

  // The lists an agent with this role sees (the base view for a role no entry names).
  const CatalogueView& View(absl::string_view role) const;
  // Whether the tool or prompt named name, or the resource at uri (an entry's
  // "uri", or one its "uriTemplate" matches; for kResource a template itself
  // too), is hidden from role.
  bool Hides(Kind kind, absl::string_view role, absl::string_view name) const;

  absl::flat_hash_map<std::string, CatalogueView> by_role;
  // Restricted entries: key (name, uri or template) -> the roles that see it.
  // Keys that an entry without roles also has are not restricted.
  absl::flat_hash_map<std::string, std::vector<std::string>> tool_roles, prompt_roles,
      resource_roles, template_roles;
  // Resources and templates any agent sees: a URI listed or matched by one of
  // them is never hidden.
  absl::flat_hash_set<std::string> open_resources;
  std::vector<std::string> open_templates;
};

// The list_changed notifications an agent whose view went from before to
// after must hear (none when its view did not change).
std::vector<std::string> ListChangedNotices(const CatalogueView& before,
                                            const CatalogueView& after);

// Whether uri matches an RFC 6570 template, each {expression} standing for one
// or more characters. O(|template| * |uri|) at worst; either over 2 KiB is
// answered if_unsure (hiding errs toward hidden).
bool MatchesUriTemplate(absl::string_view uri_template, absl::string_view uri,
                        bool if_unsure = true);

// The catalogue file, re-read when its modification time or size changes.
// Thread-safe.
class CatalogueFile {
 public:
  // Fails when the file cannot be read or parsed: a gateway must not start
  // with a broken catalogue.
  static absl::StatusOr<std::unique_ptr<CatalogueFile>> Open(std::string path);

  // The current catalogue. Cheap: a shared_ptr copy under a short lock.
  std::shared_ptr<const Catalogue> Get() const ABSL_LOCKS_EXCLUDED(mu_);

  // Re-reads the file if it changed. Returns true when the catalogue changed.
  // A file that became unreadable or invalid keeps the last good catalogue.
  absl::StatusOr<bool> Refresh() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  explicit CatalogueFile(std::string path) : path_(std::move(path)) {}

  std::string path_;
  mutable absl::Mutex mu_;
  std::shared_ptr<const Catalogue> current_ ABSL_GUARDED_BY(mu_);
  int64_t stamp_ ABSL_GUARDED_BY(mu_) = -1;
};

}  // namespace relay::gateway
