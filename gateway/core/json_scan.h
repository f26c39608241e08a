#pragma once

#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/strings/string_view.h"

namespace relay::gateway {

inline constexpr int kUnboundedDepth = 1 << 30;

// One top-level member of a JSON object: its key (unescaped) and the raw text
// of its value, a view into the scanned text.
struct JsonMember {
  std::string key;
  absl::string_view value;
};

struct ScannedJson {
  bool valid = false;      // the whole text is one JSON value
  bool too_deep = false;   // arrays and objects nest deeper than max_depth: not scanned
  bool is_object = false;  // ... and that value is an object
  // In text order, duplicates kept. A message has a handful: held inline.
  absl::InlinedVector<JsonMember, 6> members;
};

// Checks in one pass, without building any value, that text is exactly what
// nlohmann::json::parse accepts (RFC 8259 with strict UTF-8, paired surrogate
// escapes, a leading byte-order mark skipped, the text ending at a NUL byte),
// and splits a top-level object
// into its members. The relay reads the few members it routes on and passes
// the rest on as the bytes the peer sent (a tab's result, unread). Iterative:
// any depth costs no stack, and the scan stops as soon as nesting passes
// max_depth (ARCHITECTURE.md "Limits").
ScannedJson ScanJson(absl::string_view text, int max_depth = kUnboundedDepth);

// The member a parsed object would hold for key: the last of duplicates
// (keys compared unescaped); null when there is none.
const JsonMember* FindMember(const ScannedJson& scan, absl::string_view key);

}  // namespace relay::gateway
