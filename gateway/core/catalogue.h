#pragma once

#include "absl/strings/string_view.h"
#include <memory>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace relay::gateway {

// The lists the gateway answers itself, kept as ready-made JSON arrays so that
// a list request costs a string copy, not a serialization.
struct Catalogue {
  std::string tools = "[]";
  std::string resources = "[]";
  std::string resource_templates = "[]";
  std::string prompts = "[]";

  // Parses tools.json: {"tools":[…],"resources":[…],"resourceTemplates":[…],
  // "prompts":[…]} with every member optional, or a bare array of tools.
  // Each item must be an object with a string "name" (resources: "uri",
  // templates: "uriTemplate").
  static absl::StatusOr<Catalogue> Parse(absl::string_view text);
};

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
